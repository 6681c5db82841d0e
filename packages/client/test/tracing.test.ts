/**
 * The client continues the trace (docs/api.md, "Tracing in the client"), against a real
 * `rendezvous start` and a real Redis, with the OpenTelemetry SDK's in-memory exporter in this
 * process and a small node:http proxy between the client and the server that records every
 * request's headers as the server receives them.
 *
 * - Over HTTP: the register and publish requests carry the caller's span; the worker's process
 *   span is a child of the lease's `traceparent`, the handler runs inside it, and its ack (and a
 *   throwing handler's ERROR status) follow; the claim loop carries no context.
 * - Over BullMQ: a job whose `opts.telemetry.metadata` bullmq-otel wrote (a real `Queue` with
 *   `BullMQOtel`, as the dispatcher writes it) is processed inside a span that is its child, and
 *   the consume request carries that span; a job without metadata gets a root span.
 *
 * A lease carries `traceparent` once the server keeps contexts (docs/api.md, Tracing); where the
 * server hands a lease without one, the proxy adds the context of a span of this test, so the
 * worker's side is checked either way (the test prints which it was).
 */
import { mkdtempSync, writeFileSync } from "node:fs";
import { createServer, request as httpRequest, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { context, propagation, type SpanContext, SpanKind, SpanStatusCode, trace } from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import { W3CTraceContextPropagator } from "@opentelemetry/core";
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  type ReadableSpan,
  SimpleSpanProcessor,
} from "@opentelemetry/sdk-trace-base";
import { type CliProcess, eventually, redisUrl, spawnCli, uniquePrefix } from "@rendezvous/testkit";
import { Job, Queue } from "bullmq";
import { BullMQOtel } from "bullmq-otel";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ContinuationWorker } from "../src/bullmq.js";
import { HostClient, ContinuationWorker as HttpContinuationWorker, ProducerClient, type Wait } from "../src/index.js";

const HOST_KEY = "hk_trace_acme";
const PRODUCER_KEY = "pk_trace_billing";
const CONFIG = {
  partitions: 2,
  tenants: {
    acme: { hostKeys: [HOST_KEY], producers: { billing: { keys: [PRODUCER_KEY], eventTypes: ["job.*"] } } },
  },
};

const exporter = new InMemorySpanExporter();
const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
const tracer = trace.getTracer("tracing-test");

interface Seen {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
}

/** W3C traceparent → its trace id and parent (span) id. */
function parse(traceparent: unknown): { traceId: string; spanId: string } {
  const m = /^00-([0-9a-f]{32})-([0-9a-f]{16})-[0-9a-f]{2}$/.exec(String(traceparent));
  if (!m) throw new Error(`not a traceparent: ${String(traceparent)}`);
  return { traceId: m[1] as string, spanId: m[2] as string };
}

const traceparentOf = (sc: SpanContext) => `00-${sc.traceId}-${sc.spanId}-01`;

/**
 * A proxy to `target` recording each request. A claim answer's leases without a
 * `traceparent` get `standIn()`'s (the context a tracing server would hand over).
 */
async function proxy(target: string, standIn: () => string) {
  const seen: Seen[] = [];
  const leases: Array<{ waitId: string; traceparent: string; fromServer: boolean }> = [];
  const upstream = new URL(target);
  const server: Server = createServer((req, res) => {
    seen.push({ method: req.method ?? "", path: (req.url ?? "").split("?")[0] as string, headers: req.headers });
    const out = httpRequest(
      { host: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers: req.headers },
      (up) => {
        const chunks: Buffer[] = [];
        up.on("data", (c: Buffer) => chunks.push(c));
        up.on("end", () => {
          let body = Buffer.concat(chunks);
          if (req.url?.startsWith("/v1/continuations/claim") && up.statusCode === 200) {
            const answer = JSON.parse(body.toString()) as { continuations: Array<Record<string, unknown>> };
            for (const lease of answer.continuations) {
              const fromServer = typeof lease.traceparent === "string";
              if (!fromServer) lease.traceparent = standIn();
              leases.push({ waitId: String(lease.waitId), traceparent: String(lease.traceparent), fromServer });
            }
            body = Buffer.from(JSON.stringify(answer));
          }
          const headers = { ...up.headers, "content-length": String(body.length) };
          delete headers["transfer-encoding"];
          res.writeHead(up.statusCode ?? 502, headers).end(body);
        });
      },
    );
    out.on("error", () => res.destroy());
    // a client that gives up (a worker closing during its long poll) gives up upstream too
    res.on("close", () => {
      if (!res.writableFinished) out.destroy();
    });
    req.pipe(out);
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { url, seen, leases, close: () => new Promise<void>((r) => server.close(() => r())) };
}

const spans = () => exporter.getFinishedSpans();
const spanNamed = (name: string, pred: (s: ReadableSpan) => boolean = () => true) =>
  spans().filter((s) => s.name === name && pred(s));

describe("trace continuation in the client (real server, OpenTelemetry SDK in memory)", () => {
  let server: CliProcess;
  let prefix: string;
  let px: Awaited<ReturnType<typeof proxy>>;
  /** the span whose context the proxy hands over on leases the server gave none */
  let dispatch: SpanContext;

  beforeAll(async () => {
    trace.setGlobalTracerProvider(provider);
    context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
    propagation.setGlobalPropagator(new W3CTraceContextPropagator());
    prefix = uniquePrefix("trc");
    const dir = mkdtempSync(join(tmpdir(), "obs-trace-"));
    writeFileSync(join(dir, "config.json"), JSON.stringify(CONFIG));
    server = spawnCli(["start", "--config", join(dir, "config.json"), "--redis-url", redisUrl(), "--port", "0"], {
      RENDEZVOUS_PREFIX: prefix,
    });
    const url = (await server.waitFor(/listening on (http:\/\/127\.0\.0\.1:\d+)/, 25_000))[1] as string;
    const stand = tracer.startSpan("dispatch (stand-in)", { kind: SpanKind.PRODUCER });
    stand.end();
    dispatch = stand.spanContext();
    px = await proxy(url, () => traceparentOf(dispatch));
  }, 60_000);

  afterAll(async () => {
    await px?.close();
    await server?.terminate();
    await provider.shutdown();
    trace.disable();
    context.disable();
    propagation.disable();
  });

  const host = () => new HostClient({ baseUrl: px.url, token: HOST_KEY, retries: 0 });
  const requests = (re: RegExp) => px.seen.filter((r) => re.test(r.path));

  it("HTTP: register and publish carry the caller's span; the process span is the lease's child; the ack carries it", async () => {
    const run = `http-${Date.now()}`;
    const producer = new ProducerClient({ baseUrl: px.url, tenant: "acme", producer: "billing", key: PRODUCER_KEY });
    const caller = tracer.startSpan("host: start the job");
    let wait: Wait | undefined;
    await context.with(trace.setSpan(context.active(), caller), async () => {
      wait = (await host().registerWait({ runId: run, position: "p", eventType: "job.done", correlationId: run })).wait;
      await producer.publish({ id: `e-${run}`, type: "job.done", correlationId: run, payload: { ok: 1 } });
    });
    caller.end();
    const waitId = (wait as Wait).id;
    for (const path of [/^\/v1\/waits$/, /^\/v1\/events$/]) {
      const [req] = requests(path).slice(-1);
      expect(parse(req?.headers.traceparent)).toEqual({
        traceId: caller.spanContext().traceId,
        spanId: caller.spanContext().spanId,
      });
    }

    const inHandler: SpanContext[] = [];
    // made inside a span: the claim loop must not become part of its trace
    const outer = tracer.startSpan("host: boot");
    const worker = context.with(
      trace.setSpan(context.active(), outer),
      () =>
        new HttpContinuationWorker({
          host: host(),
          name: "trace-worker",
          pollMs: 300,
          handler: async () => {
            const active = trace.getActiveSpan();
            if (active) inHandler.push(active.spanContext());
            tracer.startSpan("resume the run").end(); // a child of the process span
          },
        }),
    );
    outer.end();
    try {
      await eventually(() => requests(/^\/v1\/continuations\/ack$/).length > 0);
    } finally {
      await worker.close();
    }

    const lease = px.leases.find((l) => l.waitId === waitId);
    expect(lease).toBeDefined();
    console.log(`lease traceparent from ${lease?.fromServer ? "the server" : "the proxy's stand-in"}`);
    const carried = parse(lease?.traceparent);
    const [processSpan] = spanNamed("process continuations.acme", (s) => s.attributes["rendezvous.wait.id"] === waitId);
    expect(processSpan).toBeDefined();
    const p = processSpan as ReadableSpan;
    expect(p.kind).toBe(SpanKind.CONSUMER);
    expect(p.spanContext().traceId).toBe(carried.traceId);
    expect(p.parentSpanContext?.spanId).toBe(carried.spanId);
    expect(p.attributes).toMatchObject({
      "messaging.system": "rendezvous",
      "messaging.operation.type": "process",
      "messaging.destination.name": "continuations.acme",
      "messaging.message.id": waitId,
      "rendezvous.run.id": run,
      "rendezvous.continuation.attempt": 1,
    });
    expect(p.status.code).not.toBe(SpanStatusCode.ERROR);
    // the handler ran inside it, and a span it started is its child
    expect(inHandler).toEqual([p.spanContext()]);
    const [resumed] = spanNamed("resume the run");
    expect(resumed?.parentSpanContext?.spanId).toBe(p.spanContext().spanId);
    // the ack request carried the process span
    const [ack] = requests(/^\/v1\/continuations\/ack$/);
    expect(parse(ack?.headers.traceparent)).toEqual({ traceId: carried.traceId, spanId: p.spanContext().spanId });
    // the claims carried no context: not the boot span's, not any
    const claims = requests(/^\/v1\/continuations\/claim$/);
    expect(claims.length).toBeGreaterThan(0);
    for (const c of claims) expect(c.headers.traceparent).toBeUndefined();
  }, 40_000);

  it("HTTP: a handler that throws ends its process span with ERROR; the retried lease gets a span of its own", async () => {
    const run = `fail-${Date.now()}`;
    const { wait } = await host().registerWait({
      runId: run,
      position: "p",
      eventType: "job.done",
      correlationId: run,
    });
    await host().deliver({ eventType: "job.done", correlationId: run });
    let calls = 0;
    const worker = new HttpContinuationWorker({
      host: host(),
      name: "trace-worker-2",
      pollMs: 300,
      leaseMs: 1000,
      onError: () => undefined,
      handler: async (c) => {
        if (c.wait.id !== wait.id) return;
        calls += 1;
        if (calls === 1) throw new Error("first attempt fails");
      },
    });
    const mine = () =>
      spanNamed("process continuations.acme", (s) => s.attributes["rendezvous.wait.id"] === wait.id).sort(
        (a, b) =>
          Number(a.attributes["rendezvous.continuation.attempt"]) -
          Number(b.attributes["rendezvous.continuation.attempt"]),
      );
    try {
      await eventually(() => mine().length === 2);
    } finally {
      await worker.close();
    }
    const [first, second] = mine() as [ReadableSpan, ReadableSpan];
    expect(first.attributes["rendezvous.continuation.attempt"]).toBe(1);
    expect(first.status).toMatchObject({ code: SpanStatusCode.ERROR, message: "first attempt fails" });
    expect(first.events.map((e) => e.name)).toContain("exception");
    expect(second.attributes["rendezvous.continuation.attempt"]).toBe(2);
    expect(second.status.code).not.toBe(SpanStatusCode.ERROR);
    expect(second.spanContext().spanId).not.toBe(first.spanContext().spanId);
    for (const s of [first, second]) {
      const lease = px.leases.filter((l) => l.waitId === wait.id);
      expect(lease.map((l) => parse(l.traceparent).spanId)).toContain(s.parentSpanContext?.spanId);
    }
  }, 40_000);

  it("BullMQ: the process span is the child of the job's telemetry metadata (bullmq-otel); the consume request carries it", async () => {
    const run = `bull-${Date.now()}`;
    const { wait } = await host().registerWait({
      runId: run,
      position: "p",
      eventType: "job.done",
      correlationId: run,
    });
    await host().deliver({ eventType: "job.done", correlationId: run, payload: { via: "deliver" } });
    const resolved = await host().getWait(wait.id);
    expect(resolved.state).toBe("resolved");

    // a queue of the test's own (the worker's `queue` option): its one job is written by a
    // BullMQ Queue with bullmq-otel's telemetry inside a span, as a tracing dispatcher writes it
    const queueName = `traced.${run}`;
    const connection = new Redis(redisUrl(), { maxRetriesPerRequest: null });
    const queue = new Queue(queueName, {
      connection,
      prefix,
      telemetry: new BullMQOtel({ tracerName: "tracing-test-dispatcher" }),
    });
    const dispatcher = tracer.startSpan("dispatcher: hand over");
    await context.with(trace.setSpan(context.active(), dispatcher), () =>
      queue.add("continuation", resolved, { jobId: wait.id }),
    );
    dispatcher.end();
    const job = await Job.fromId(queue, wait.id);
    const metadata = JSON.parse(String(job?.opts.telemetry?.metadata)) as { traceparent?: string };
    const carried = parse(metadata.traceparent);
    const [added] = spanNamed(`add ${queueName}.continuation`); // bullmq names it `add <queue>.<job name>`
    expect(added?.kind).toBe(SpanKind.PRODUCER);
    expect(carried).toEqual({ traceId: dispatcher.spanContext().traceId, spanId: added?.spanContext().spanId });

    const ran: SpanContext[] = [];
    const worker = new ContinuationWorker({
      tenant: "acme",
      host: host(),
      name: "bull-worker",
      connection,
      prefix,
      queue: queueName,
      handler: async (c) => {
        expect(c.payload).toEqual({ via: "deliver" });
        const active = trace.getActiveSpan();
        if (active) ran.push(active.spanContext());
      },
    });
    try {
      await eventually(() => ran.length === 1 && spanNamed(`process ${queueName}`).length === 1);
    } finally {
      await worker.close();
      await queue.close();
      connection.disconnect();
    }
    const [p] = spanNamed(`process ${queueName}`) as [ReadableSpan];
    expect(p.kind).toBe(SpanKind.CONSUMER);
    expect(p.spanContext().traceId).toBe(carried.traceId);
    expect(p.parentSpanContext?.spanId).toBe(carried.spanId);
    expect(p.attributes).toMatchObject({
      "messaging.system": "bullmq",
      "messaging.destination.name": queueName,
      "rendezvous.wait.id": wait.id,
      "rendezvous.run.id": run,
    });
    expect(ran).toEqual([p.spanContext()]);
    const consume = requests(new RegExp(`^/v1/waits/${wait.id}/consume$`));
    expect(consume).toHaveLength(1);
    expect(parse(consume[0]?.headers.traceparent)).toEqual({
      traceId: carried.traceId,
      spanId: p.spanContext().spanId,
    });
  }, 40_000);

  it("BullMQ: a job without telemetry metadata gets a root process span, which its consume request carries", async () => {
    const run = `root-${Date.now()}`;
    const { wait } = await host().registerWait({
      runId: run,
      position: "p",
      eventType: "job.done",
      correlationId: run,
    });
    await host().deliver({ eventType: "job.done", correlationId: run });
    const queueName = `plain.${run}`;
    const connection = new Redis(redisUrl(), { maxRetriesPerRequest: null });
    const queue = new Queue(queueName, { connection, prefix }); // no telemetry: no metadata
    await queue.add("continuation", await host().getWait(wait.id), { jobId: wait.id });
    expect((await Job.fromId(queue, wait.id))?.opts.telemetry).toBeUndefined();
    let ran = 0;
    const worker = new ContinuationWorker({
      tenant: "acme",
      host: host(),
      name: "bull-worker-2",
      connection,
      prefix,
      queue: queueName,
      handler: async () => {
        ran += 1;
      },
    });
    try {
      await eventually(() => ran === 1 && spanNamed(`process ${queueName}`).length === 1);
    } finally {
      await worker.close();
      await queue.close();
      connection.disconnect();
    }
    const [p] = spanNamed(`process ${queueName}`) as [ReadableSpan];
    expect(p.parentSpanContext).toBeUndefined();
    const [consume] = requests(new RegExp(`^/v1/waits/${wait.id}/consume$`));
    expect(parse(consume?.headers.traceparent)).toEqual({
      traceId: p.spanContext().traceId,
      spanId: p.spanContext().spanId,
    });
  }, 40_000);
});
