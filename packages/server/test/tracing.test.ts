/**
 * Tracing across real role processes (docs/api.md, Tracing): `api`, `matcher` and
 * `dispatcher` as separate `rendezvous` processes exporting OTLP/HTTP JSON to a receiver
 * in this test. One event sent with a `traceparent` gives spans from every process, each
 * the child of the one before (producer request → accepted → matched → dispatched →
 * consumed), the match and the dispatch linking the wait's registration; a re-send under
 * another trace stays a duplicate. A host BullMQ `Worker` with bullmq-otel continues the
 * trace from the job; timeouts (a `scheduler` process), cancels and deliveries give
 * spans in the registration's or the request's trace.
 */
import { randomBytes } from "node:crypto";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { context, trace } from "@opentelemetry/api";
import { InMemorySpanExporter, NodeTracerProvider, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-node";
import { type ConfigInput, createResources, parseConfig, type Resources } from "@rendezvous/engine";
import { type CliProcess, eventually, redisUrl, spawnCli, trackOpen, uniquePrefix } from "@rendezvous/testkit";
import { continuationQueueName } from "@rendezvous/workers";
import { Worker } from "bullmq";
import { BullMQOtel } from "bullmq-otel";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type OtlpReceiver, type ReceivedSpan, startOtlpReceiver } from "./otlp-receiver.js";

const HOST = { authorization: "Bearer hk_acme_trace", "content-type": "application/json" };
const PRODUCER = {
  authorization: "Bearer pk_billing_trace",
  "rendezvous-producer": "acme/billing",
  "content-type": "application/json",
};
const CONFIG: ConfigInput = {
  partitions: 4,
  tenants: {
    acme: {
      hostKeys: ["hk_acme_trace"],
      producers: { billing: { keys: ["pk_billing_trace"], eventTypes: ["order.*"] } },
    },
    // taken by a BullMQ worker of this test, not over HTTP
    globex: {
      hostKeys: ["hk_globex_trace"],
      producers: { shop: { keys: ["pk_shop_trace"], eventTypes: ["order.*"] } },
    },
  },
};

const hex = (bytes: number) => randomBytes(bytes).toString("hex");
const traceparent = (traceId = hex(16), spanId = hex(8)) => ({ traceId, spanId, header: `00-${traceId}-${spanId}-01` });
const idsOf = (tp: string) => {
  const [, traceId = "", spanId = ""] = tp.split("-");
  return { traceId, spanId };
};

let receiver: OtlpReceiver;
let api: CliProcess;
let roles: CliProcess[] = [];
let base = "";
let res: Resources;
const prefix = uniquePrefix("trace");

beforeAll(async () => {
  receiver = await startOtlpReceiver();
  const dir = mkdtempSync(join(tmpdir(), "trace-roles-"));
  const configFile = join(dir, "config.json");
  writeFileSync(configFile, JSON.stringify(CONFIG));
  const env = {
    RENDEZVOUS_PREFIX: prefix,
    OTEL_TRACES_EXPORTER: "otlp",
    OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: receiver.url,
    OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
    OTEL_BSP_SCHEDULE_DELAY: "100",
    OTEL_SERVICE_NAME: undefined,
  };
  const role = (name: string) =>
    spawnCli([name, "--config", configFile, "--redis-url", redisUrl(), "--port", "0"], env);
  api = role("api");
  roles = [api, role("matcher"), role("dispatcher"), role("scheduler")];
  for (const r of roles) await r.waitFor(/listening on/, 30_000);
  const m = await api.waitFor(/listening on (http:\/\/[0-9.:]+)/);
  base = m[1] as string;
  // a connection for the host's BullMQ worker (the run's private Redis, this test's prefix)
  res = createResources({
    redisUrl: redisUrl(),
    prefix,
    config: parseConfig(CONFIG),
    logger: pino({ level: "silent" }),
  });
  trackOpen({ quit: () => res.close() });
}, 60_000);

afterAll(async () => {
  await Promise.all(roles.map((r) => r.terminate()));
  await receiver?.close();
});

async function post(path: string, body: unknown, headers: Record<string, string>) {
  const res = await fetch(`${base}${path}`, { method: "POST", headers, body: JSON.stringify(body) });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

/** The one span of the trace with this name and service; waits until it is exported. */
async function spanOf(traceId: string, name: string, service: string): Promise<ReceivedSpan> {
  return eventually(
    async () => receiver.spans.find((s) => s.traceId === traceId && s.name === name && s.service === service),
    15_000,
    50,
  );
}

describe("tracing across api, matcher and dispatcher processes", () => {
  it("one event's trace: request → ingest → match → dispatch → lease → consume, across processes", async () => {
    const registration = traceparent();
    const registered = await post(
      "/v1/waits",
      { runId: "run-t1", position: "pay", eventType: "order.paid", correlationId: "o-1", timeoutMs: 60_000 },
      { ...HOST, traceparent: registration.header, tracestate: "rdv=reg" },
    );
    expect(registered.status).toBe(201);
    const waitId = (registered.body.wait as { id: string }).id;

    const producer = traceparent();
    const event = { id: "evt-t1", type: "order.paid", correlationId: "o-1", payload: { amount: 5 } };
    const sent = await post("/v1/events", event, { ...PRODUCER, traceparent: producer.header });
    expect(sent.status).toBe(202);

    // the continuation over HTTP: its lease carries the trace on
    const claimed = await post(
      "/v1/continuations/claim",
      { worker: "w-1", waitMs: 10_000 },
      { ...HOST, traceparent: traceparent().header },
    );
    expect(claimed.status).toBe(200);
    const [lease] = claimed.body.continuations as Array<{ leaseId: string; waitId: string; traceparent?: string }>;
    expect(lease?.waitId).toBe(waitId);
    expect(lease?.traceparent).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/);
    const leaseIds = idsOf(lease?.traceparent as string);
    expect(leaseIds.traceId).toBe(producer.traceId);

    const consumed = await post(
      `/v1/waits/${waitId}/consume`,
      { worker: "w-1" },
      { ...HOST, traceparent: lease?.traceparent as string },
    );
    expect(consumed.status).toBe(200);
    expect(consumed.body.first).toBe(true);
    expect((await post(`/v1/continuations/${lease?.leaseId}/ack`, {}, HOST)).status).toBe(200);

    // a re-send of the same event under another trace is still a duplicate
    const again = await post("/v1/events", event, { ...PRODUCER, traceparent: traceparent().header });
    expect(again.status).toBe(200);
    expect(again.body.status).toBe("duplicate");

    const t = producer.traceId;
    const publish = await spanOf(t, "POST /v1/events", "rendezvous-api");
    const ingest = await spanOf(t, "rendezvous.ingest", "rendezvous-api");
    const match = await spanOf(t, "rendezvous.match", "rendezvous-matcher");
    const dispatch = await spanOf(t, "rendezvous.dispatch", "rendezvous-dispatcher");
    const consumeRequest = await spanOf(t, "POST /v1/waits/:id/consume", "rendezvous-api");
    const consume = await spanOf(t, "rendezvous.consume", "rendezvous-api");
    const registerSpan = await spanOf(registration.traceId, "POST /v1/waits", "rendezvous-api");

    // parent → child across the three processes
    expect(publish.parentSpanId).toBe(producer.spanId);
    expect(publish.kind).toBe(2); // SERVER
    expect(ingest.parentSpanId).toBe(publish.spanId);
    expect(ingest.kind).toBe(4); // PRODUCER
    expect(match.parentSpanId).toBe(ingest.spanId);
    expect(match.kind).toBe(5); // CONSUMER
    expect(dispatch.parentSpanId).toBe(match.spanId);
    expect(dispatch.kind).toBe(4);
    expect(leaseIds.spanId).toBe(dispatch.spanId);
    expect(consumeRequest.parentSpanId).toBe(dispatch.spanId);
    expect(consume.parentSpanId).toBe(consumeRequest.spanId);
    expect(consume.attributes["rendezvous.consume.first"]).toBe(true);
    // the wait's registration (its own trace) is linked from the match and the dispatch
    expect(registerSpan.parentSpanId).toBe(registration.spanId);
    const registrationLink = { traceId: registration.traceId, spanId: registerSpan.spanId };
    expect(match.links).toContainEqual(registrationLink);
    expect(dispatch.links).toContainEqual(registrationLink);
    // every process that handled the event is in the trace, and the consume ends it
    const chain = [publish, ingest, match, dispatch, consumeRequest, consume];
    expect(new Set(chain.map((s) => s.service))).toEqual(
      new Set(["rendezvous-api", "rendezvous-matcher", "rendezvous-dispatcher"]),
    );
    for (const s of chain.slice(0, -1)) expect(consume.startNs >= s.startNs).toBe(true);
    // the duplicate's request is a trace of its own: it joined nothing of this one
    expect(receiver.refused).toBe(0);
  }, 60_000);

  it("a claim with consume: true consumes each lease in the lease's trace, linked to the claim", async () => {
    const registered = await post(
      "/v1/waits",
      { runId: "run-t2", position: "pay", eventType: "order.paid", correlationId: "o-2" },
      { ...HOST, traceparent: traceparent().header },
    );
    expect(registered.status).toBe(201);
    const producer = traceparent();
    const sent = await post(
      "/v1/events/batch",
      { events: [{ id: "evt-t2", type: "order.paid", correlationId: "o-2" }] },
      { ...PRODUCER, traceparent: producer.header },
    );
    expect(sent.status).toBe(200);
    const claim = traceparent();
    const claimed = await post(
      "/v1/continuations/claim",
      { worker: "w-2", waitMs: 10_000, consume: true },
      { ...HOST, traceparent: claim.header },
    );
    const [lease] = claimed.body.continuations as Array<{ traceparent?: string; consumed?: { first: boolean } }>;
    expect(lease?.consumed?.first).toBe(true);
    const batchIngest = await spanOf(producer.traceId, "rendezvous.ingest", "rendezvous-api");
    expect(batchIngest.attributes["rendezvous.ingest.accepted"]).toBe(1);
    const dispatch = await spanOf(producer.traceId, "rendezvous.dispatch", "rendezvous-dispatcher");
    const consume = await spanOf(producer.traceId, "rendezvous.consume", "rendezvous-api");
    const claimSpan = await spanOf(claim.traceId, "POST /v1/continuations/claim", "rendezvous-api");
    expect(idsOf(lease?.traceparent as string).spanId).toBe(dispatch.spanId);
    expect(consume.parentSpanId).toBe(dispatch.spanId);
    expect(consume.links).toContainEqual({ traceId: claim.traceId, spanId: claimSpan.spanId });
  }, 60_000);
  it("a host BullMQ Worker configured with bullmq-otel continues the trace from the continuation job", async () => {
    const exporter = new InMemorySpanExporter();
    const provider = new NodeTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
    provider.register(); // the W3C propagator and the context manager bullmq-otel uses
    const seen: Array<{ id: string | undefined; traceId: string | undefined }> = [];
    const worker = new Worker(
      continuationQueueName("globex"),
      async (job) => {
        seen.push({ id: job.id, traceId: trace.getSpan(context.active())?.spanContext().traceId });
      },
      {
        connection: res.connect("bullmq-host", { blocking: true }),
        prefix,
        telemetry: new BullMQOtel({ tracerName: "host" }),
      },
    );
    try {
      const registered = await post(
        "/v1/waits",
        { runId: "run-g1", position: "pay", eventType: "order.paid", correlationId: "g-1" },
        { authorization: "Bearer hk_globex_trace", "content-type": "application/json" },
      );
      expect(registered.status).toBe(201);
      const waitId = (registered.body.wait as { id: string }).id;
      const producer = traceparent();
      const sent = await post(
        "/v1/events",
        { id: "evt-g1", type: "order.paid", correlationId: "g-1" },
        {
          authorization: "Bearer pk_shop_trace",
          "rendezvous-producer": "globex/shop",
          "content-type": "application/json",
          traceparent: producer.header,
        },
      );
      expect(sent.status).toBe(202);
      await eventually(async () => seen.length > 0 && exporter.getFinishedSpans().length > 0, 15_000, 50);
      expect(seen[0]).toEqual({ id: waitId, traceId: producer.traceId });
      const dispatch = await spanOf(producer.traceId, "rendezvous.dispatch", "rendezvous-dispatcher");
      const processSpan = exporter.getFinishedSpans().find((s) => s.name.startsWith("process"));
      expect(processSpan?.spanContext().traceId).toBe(producer.traceId);
      expect(processSpan?.parentSpanContext?.spanId).toBe(dispatch.spanId);
    } finally {
      await worker.close();
      await provider.shutdown();
      trace.disable();
      context.disable();
    }
  }, 60_000);

  it("timeout, cancel and deliver: a span of the resolution; the continuation carries the context on", async () => {
    const register = async (runId: string, correlationId: string, timeoutMs?: number) => {
      const tp = traceparent();
      const r = await post(
        "/v1/waits",
        { runId, position: "p", eventType: "order.shipped", correlationId, ...(timeoutMs ? { timeoutMs } : {}) },
        { ...HOST, traceparent: tp.header },
      );
      expect(r.status).toBe(201);
      const span = await spanOf(tp.traceId, "POST /v1/waits", "rendezvous-api");
      return { id: (r.body.wait as { id: string }).id, tp, span };
    };
    const timedOut = await register("run-t3", "x-1", 200);
    const cancelled = await register("run-t4", "x-2");
    const delivered = await register("run-t5", "x-3");

    const cancel = traceparent();
    const cancelRes = await fetch(`${base}/v1/waits/${cancelled.id}`, {
      method: "DELETE",
      headers: { authorization: HOST.authorization, traceparent: cancel.header },
    });
    expect(cancelRes.status).toBe(200);
    const deliver = traceparent();
    const d = await post(
      "/v1/deliver",
      { eventType: "order.shipped", correlationId: "x-3" },
      { ...HOST, traceparent: deliver.header },
    );
    expect(d.body.delivered).toEqual([delivered.id]);

    // the timeout: in the registration's trace, as is its continuation's dispatch
    const timeout = await spanOf(timedOut.tp.traceId, "rendezvous.timeout", "rendezvous-scheduler");
    expect(timeout.parentSpanId).toBe(timedOut.span.spanId);
    expect(timeout.attributes["rendezvous.wait.id"]).toBe(timedOut.id);
    const timeoutDispatch = await spanOf(timedOut.tp.traceId, "rendezvous.dispatch", "rendezvous-dispatcher");
    expect(timeoutDispatch.parentSpanId).toBe(timedOut.span.spanId);

    // cancel and deliver: in the request's trace, the registration linked from the dispatch
    for (const [request, wait, name] of [
      [cancel, cancelled, "rendezvous.cancel"],
      [deliver, delivered, "rendezvous.deliver"],
    ] as const) {
      const resolution = await spanOf(request.traceId, name, "rendezvous-api");
      const dispatch = await spanOf(request.traceId, "rendezvous.dispatch", "rendezvous-dispatcher");
      expect(dispatch.parentSpanId).toBe(resolution.spanId);
      expect(dispatch.attributes["rendezvous.wait.id"]).toBe(wait.id);
      expect(dispatch.links).toContainEqual({ traceId: wait.tp.traceId, spanId: wait.span.spanId });
    }
  }, 60_000);
});
