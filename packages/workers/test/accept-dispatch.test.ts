/**
 * Continuations added in the accept (docs/architecture.md): in `rendezvous start` on a
 * single Redis, the step that resolves a plain wait by an event also adds its continuation
 * job (lua/ingestDispatchEvents-18.lua), with the Wait rendered in Lua (wait-view.lua). The
 * job must be the one the dispatcher would have added: the same data (the Wait as
 * `toWait` renders the record), name, id and options, its continuation_dispatched entry
 * once, and no outbox entry (nothing for the dispatcher). Waits the script does not render (shapes), and
 * tenants whose continuations go elsewhere (a webhook), stay the dispatcher's.
 */
import type { Resources } from "@rendezvous/engine";
import type { Wait } from "@rendezvous/protocol";
import { eventually, makeResources } from "@rendezvous/testkit";
import { Queue } from "bullmq";
import type { Redis } from "ioredis";
import { describe, expect, it } from "vitest";
import { continuationQueueName, Dispatcher, Matcher } from "../src/index.js";

const handoffs = async (res: Resources) => (await res.metrics.outboxHandoffs.get()).values[0]?.value ?? 0;
const dispatchedCount = async (res: Resources) =>
  (await res.metrics.continuationsDispatched.get()).values.reduce((s, v) => s + v.value, 0);

/** `start`'s matcher and dispatcher on `res`, the accept's jobs ready for `tenant`, around `body`. */
async function inStart(res: Resources, tenant: string, body: (d: Dispatcher) => Promise<void>) {
  // the dispatcher's read waits long: what it adds, it adds from a handoff or a claim
  const dispatcher = new Dispatcher(res, { blockMs: 60_000, webhookConcurrency: 0 });
  const matcher = new Matcher(res, { blockMs: 100, dispatcher });
  // (as server/roles.ts does for `start`)
  res.store.acceptWith(matcher.acceptor(dispatcher));
  await dispatcher.start();
  await matcher.start();
  try {
    dispatcher.jobsFor(tenant);
    await eventually(async () => dispatcher.jobsFor(tenant));
    await body(dispatcher);
  } finally {
    await matcher.stop();
    await dispatcher.stop();
  }
}

async function jobsOf(res: Resources, tenant: string, ids: string[]) {
  const queue = new Queue(continuationQueueName(tenant), { connection: res.connect("q"), prefix: res.queuePrefix });
  try {
    return await Promise.all(ids.map((id) => queue.getJob(id)));
  } finally {
    await queue.close();
  }
}

/** The jobs of `ids` on the tenant's queue, once every one of them is there. */
const allJobs = (res: Resources, tenant: string, ids: string[]) =>
  eventually(async () => {
    const found = await jobsOf(res, tenant, ids);
    return found.every(Boolean) ? found : undefined;
  });

/** `n` plain waits of `acme` for job.done, correlation ids `<prefix>-<i>`: their specs and the waits. */
async function plainWaits(res: Resources, prefix: string, n: number) {
  const specs = Array.from({ length: n }, (_, i) => ({
    runId: `run-${prefix}${i}`,
    position: "a",
    eventType: "job.done",
    correlationId: `${prefix}-${i}`,
  }));
  const waits: Wait[] = [];
  for (const s of specs) waits.push((await res.store.register("acme", s)).wait);
  return { specs, waits };
}

/** The Wait a job carries: the wait's record as read now, less what came after its dispatch. */
async function dispatchedView(res: Resources, tenant: string, waitId: string) {
  const w = await res.store.getWait(tenant, waitId);
  if (!w) throw new Error(`no wait ${waitId}`);
  return { ...w, history: w.history.filter((h) => h.what !== "continuation_dispatched") };
}

const text = 'quote " backslash \\ slash / tab \t line \u2028 é 😀';
const payloads: Array<Record<string, unknown> | undefined> = [
  { n: 12345678901234568, f: 0.1, neg: -0, big: 1e300, list: [], obj: {}, nested: { a: [1, [2, {}]] }, text },
  undefined,
  { only: null, t: true, f: false },
  {},
  { at: "2028-02-29" },
];

describe("continuations added in the accept", () => {
  it("adds the job the dispatcher would: the Wait rendered in Lua equals toWait's, once", async () => {
    const res = makeResources({ partitions: 2 });
    await inStart(res, "acme", async () => {
      const now = Date.now();
      const specs = [
        {
          runId: "run-1",
          position: "a",
          eventType: "job.done",
          correlationId: "c-1",
          deadline: new Date(now + 86_400_000 * 40).toISOString(),
          externalJobId: "ext-1",
          metadata: { list: [], obj: {}, n: 12345678901234568, text },
        },
        {
          runId: text,
          position: "b",
          eventType: "job.done",
          correlationId: "c/2 é",
          since: new Date(now - 60_000).toISOString(),
        },
        {
          runId: "run-3",
          position: "c",
          eventType: "job.done",
          correlationId: "c-3",
          token: true,
          heartbeatMs: 60_000,
        },
        { runId: "run-4", position: "d", eventType: "other.type", correlationId: "c-4", timeoutMs: 3_600_000 },
        // (a leap day a century back)
        {
          runId: "run-5",
          position: "e",
          eventType: "job.done",
          correlationId: "c-5",
          since: "2000-02-29T23:59:59.999Z",
        },
      ];
      const waits = [];
      for (const s of specs) waits.push((await res.store.register("acme", s)).wait);
      // history before the resolution: a job attached, a heartbeat (a deadline moved)
      await res.store.attachJob("acme", waits[0]?.id as string, "ext-2");
      await res.store.heartbeat("acme", waits[2]?.id as string);
      const events = specs.map((s, i) => ({
        id: `e${i}`,
        type: s.eventType,
        correlationId: s.correlationId,
        ...(payloads[i] === undefined ? {} : { payload: payloads[i] }),
      }));
      await res.store.ingest("acme", "svc", events);
      const ids = waits.map((w) => w.id);
      const jobs = await allJobs(res, "acme", ids);
      for (const [i, job] of jobs.entries()) {
        const id = ids[i] as string;
        expect(job?.name).toBe("continuation");
        expect(job?.id).toBe(id);
        expect(job?.data).toEqual(await dispatchedView(res, "acme", id));
        expect(job?.opts).toMatchObject({
          jobId: id,
          removeOnComplete: { age: 86_400 },
          removeOnFail: { age: 604_800 },
        });
        const w = await res.store.getWait("acme", id);
        // (the script passes the resolution's time to BullMQ as text: stored as the number's digits)
        expect(job?.timestamp).toBe(Date.parse(w?.resolution?.at as string));
        expect(await res.redis.hget(`${res.queuePrefix}:continuations.acme:${id}`, "timestamp")).toBe(
          String(job?.timestamp),
        );
        const entries = w?.history.filter((h) => h.what === "continuation_dispatched");
        expect(entries?.map(({ at: _at, ...rest }) => rest)).toEqual([
          { what: "continuation_dispatched", queue: "continuations.acme", jobId: id },
        ]);
      }
      // none of them went through the dispatcher: no handoff, no outbox entry
      expect(await handoffs(res)).toBe(0);
      expect(await dispatchedCount(res)).toBe(5);
      expect((await res.metrics.acceptContinuations.get()).values[0]?.value).toBe(5);
      for (const p of [0, 1]) {
        const k = res.store.keys.partition(p);
        expect(await res.redis.xlen(k.outbox)).toBe(0);
      }
    });
  });

  it("leaves a shaped wait, a traced one, and every wait of a tenant with a webhook to the dispatcher: the same job", async () => {
    const res = makeResources({
      partitions: 1,
      tenants: { hooked: { webhook: { url: "http://127.0.0.1:9/hook", secret: "s" } } },
    });
    const shaped = { runId: "run-s", position: "s", eventType: "job.done", correlationId: "c-s", count: 2 };
    const plain = { runId: "run-p", position: "p", eventType: "job.done", correlationId: "c-p" };
    await inStart(res, "acme", async (dispatcher) => {
      expect(dispatcher.jobsFor("hooked")).toBeUndefined();
      const s = (await res.store.register("acme", shaped)).wait;
      const p = (await res.store.register("acme", plain)).wait;
      const h = (await res.store.register("hooked", plain)).wait;
      // registered with a trace context: its job carries it on (BullMQ's telemetry)
      const traceparent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
      const t = (await res.store.register("acme", { ...plain, runId: "run-t", correlationId: "c-t" }, { traceparent }))
        .wait;
      await res.store.ingest("acme", "svc", [
        { id: "e1", type: "job.done", correlationId: "c-s", payload: { n: 1 } },
        { id: "e2", type: "job.done", correlationId: "c-s", payload: { n: 2 } },
        { id: "e3", type: "job.done", correlationId: "c-p" },
        { id: "e5", type: "job.done", correlationId: "c-t" },
      ]);
      await res.store.ingest("hooked", "svc", [{ id: "e4", type: "job.done", correlationId: "c-p" }]);
      const [sJob, pJob, tJob] = await allJobs(res, "acme", [s.id, p.id, t.id]);
      const [hJob] = await allJobs(res, "hooked", [h.id]);
      expect(sJob?.data).toEqual(await dispatchedView(res, "acme", s.id));
      expect(hJob?.data).toEqual(await dispatchedView(res, "hooked", h.id));
      expect(tJob?.data).toEqual(await dispatchedView(res, "acme", t.id));
      expect(tJob?.opts.telemetry?.metadata).toContain("0af7651916cd43dd8448eb211c80319c");
      // the dispatcher's jobs and the accept's carry the same options (their job ids aside)
      const opts = (o: object | undefined) => ({ ...o, jobId: undefined });
      expect(opts(pJob?.opts)).toEqual(opts(sJob?.opts));
      // the shaped wait, the traced one and the hooked tenant's went through the dispatcher
      expect(await handoffs(res)).toBe(3);
      expect(await dispatchedCount(res)).toBe(4);
    });
  });

  it("takes a step's events of several partitions in one call: each partition's outcome as in a call of its own", async () => {
    const res = makeResources({ partitions: 8 });
    await inStart(res, "acme", async () => {
      const { specs, waits } = await plainWaits(res, "c", 12);
      const event = (i: number) => ({ id: `e${i}`, type: "job.done", correlationId: `c-${i}`, payload: { i } });
      // one event sent before (a duplicate in the step), one for no wait (buffered)
      await res.store.ingest("acme", "svc", [event(0)]);
      const partitions = new Set(specs.map((s) => res.store.keys.matchPartition("acme", s.eventType, s.correlationId)));
      expect(partitions.size).toBeGreaterThan(3);

      // the store's script calls, as Redis saw them (MONITOR): the accept's take the queue's
      // keys after the partition's (18 keys and more)
      const addr = /addr=(\S+)/.exec(String(await res.redis.client("INFO")))?.[1];
      const monitor = await (res.connect("monitor") as Redis).monitor();
      const seen: string[][] = [];
      monitor.on("monitor", (_time: string, args: string[], source: string) => {
        if (source.endsWith(addr as string)) seen.push(args);
      });
      const scriptCalls = async <T>(body: () => Promise<T>) => {
        const from = seen.length;
        const out = await body();
        const mark = `mark-${from}`;
        await res.redis.echo(mark);
        await eventually(async () => (seen.some((a) => a[1] === mark) ? true : undefined));
        const calls = seen.slice(from).filter((a) => /^eval/i.test(a[0] ?? ""));
        return { out, calls, accepts: calls.filter((c) => Number(c[2]) >= 18) };
      };
      const step = await scriptCalls(() =>
        res.store.ingest("acme", "svc", [
          ...specs.map((_, i) => event(i)),
          { id: "e-none", type: "job.done", correlationId: "c-none" },
        ]),
      );
      const results = step.out;
      // (the other call is the duplicate's note on its wait)
      expect(step.accepts).toHaveLength(1);
      expect(step.calls).toHaveLength(2);

      expect(results.map((r) => r.status)).toEqual(["duplicate", ...specs.slice(1).map(() => "accepted"), "accepted"]);
      const ids = waits.map((w) => w.id);
      const jobs = await allJobs(res, "acme", ids);
      for (const [i, job] of jobs.entries()) {
        const id = ids[i] as string;
        // (the re-sent event's duplicate_ignored came after the job was added)
        const view = await dispatchedView(res, "acme", id);
        view.history = view.history.filter((h) => h.what !== "duplicate_ignored");
        expect(job?.data).toEqual(view);
        const w = await res.store.getWait("acme", id);
        expect(w?.resolution?.event?.id).toBe(`e${i}`);
        expect(w?.history.filter((h) => h.what === "continuation_dispatched")).toHaveLength(1);
      }
      const none = await res.store.getEvent("acme", "svc", "e-none");
      expect(none?.status).toBe("buffered");
      expect(await handoffs(res)).toBe(0);
      expect(await dispatchedCount(res)).toBe(12);
      for (let p = 0; p < 8; p++) expect(await res.redis.xlen(res.store.keys.partition(p).outbox)).toBe(0);

      // an event id claimed before with other content: the call writes nothing, and the
      // step's events take the two steps (that one refused, the others accepted)
      const { specs: more, waits: moreWaits } = await plainWaits(res, "m", 6);
      const second = await res.store.ingest("acme", "svc", [
        ...more.map((s, i) => ({ id: `m${i}`, type: s.eventType, correlationId: s.correlationId })),
        { id: "e1", type: "job.done", correlationId: "c-1", payload: { other: true } },
      ]);
      expect(second.map((r) => r.status)).toEqual([...more.map(() => "accepted"), "rejected"]);
      await allJobs(
        res,
        "acme",
        moreWaits.map((w) => w.id),
      );
      for (const w of moreWaits) expect((await res.store.getWait("acme", w.id))?.state).toBe("resolved");

      // a step of more events than a call may match: calls of whole partitions, each of at
      // most that many events (16 with the default fan-out cap), fewer than one per partition
      const { specs: many, waits: manyWaits } = await plainWaits(res, "n", 40);
      const big = await scriptCalls(() =>
        res.store.ingest(
          "acme",
          "svc",
          many.map((s, i) => ({ id: `n${i}`, type: s.eventType, correlationId: s.correlationId })),
        ),
      );
      monitor.disconnect();
      expect(big.out.every((r) => r.status === "accepted")).toBe(true);
      expect(big.accepts.length).toBeGreaterThanOrEqual(3);
      expect(big.accepts.length).toBeLessThan(
        new Set(many.map((s) => res.store.keys.matchPartition("acme", s.eventType, s.correlationId))).size,
      );
      await allJobs(
        res,
        "acme",
        manyWaits.map((w) => w.id),
      );

      // a step with an event that carries a trace context: the others together, that one in
      // a call of its partition (the dispatcher hands its wait out, in its span), all resolved
      const { specs: mixed, waits: mixedWaits } = await plainWaits(res, "t", 5);
      const traceparent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
      const handedBefore = await handoffs(res);
      const third = await res.store.ingest(
        "acme",
        "svc",
        mixed.map((s, i) => ({
          id: `t${i}`,
          type: s.eventType,
          correlationId: s.correlationId,
          ...(i === 2 ? { trace: { traceparent } } : {}),
        })),
      );
      expect(third.every((r) => r.status === "accepted")).toBe(true);
      await allJobs(
        res,
        "acme",
        mixedWaits.map((w) => w.id),
      );
      expect(await handoffs(res)).toBe(handedBefore + 1);
    });
  });
});
