/**
 * The hand-off decided with the resolution (docs/api.md, Continuations): where ingest
 * matches what it appends (acceptEvents, `rendezvous start`) for a tenant whose waits all
 * go to `continuations.<tenant>`, the script records the wait's continuation_dispatched
 * with its resolution and puts the queue on the outbox entry; whichever dispatcher hands
 * the entry out (the process's own, or another after a claim) uses that queue and records
 * nothing more. A tenant with continuationGroups leaves the choice, and the entry, to the
 * dispatcher. Each wait ends with one continuation_dispatched per job id either way.
 */
import { DISPATCHER_GROUP, MATCHER_GROUP, type Resources, type StreamEntry } from "@rendezvous/engine";
import { eventually, makeResources } from "@rendezvous/testkit";
import { Queue } from "bullmq";
import { afterEach, describe, expect, it } from "vitest";
import { continuationQueueName, Dispatcher, Matcher } from "../src/index.js";

const spec = (runId: string, eventType: string, correlationId: string) => ({
  runId,
  position: "step",
  eventType,
  correlationId,
});
const ev = (id: string, type: string, correlationId: string) => ({ id, type, correlationId, payload: { id } });

const closing: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of closing.splice(0).reverse()) await close();
});

async function groups(res: Resources) {
  const k = res.store.keys.partition(0);
  await res.redis.xgroup("CREATE", k.stream, MATCHER_GROUP, "0", "MKSTREAM");
  await res.redis.xgroup("CREATE", k.outbox, DISPATCHER_GROUP, "0", "MKSTREAM");
  return k;
}

function queueOf(res: Resources, name: string): Queue {
  const q = new Queue(name, { connection: res.connect(`q-${name}`), prefix: res.queuePrefix });
  closing.push(() => q.close());
  return q;
}

async function started(res: Resources) {
  const dispatcher = new Dispatcher(res, { blockMs: 100, webhookConcurrency: 0 });
  const matcher = new Matcher(res, { blockMs: 100, dispatcher });
  await dispatcher.start();
  closing.push(() => dispatcher.stop());
  res.store.acceptWith(matcher.acceptor(dispatcher));
  return dispatcher;
}

const dispatchedOf = async (res: Resources, waitId: string) =>
  ((await res.store.getWait("acme", waitId))?.history ?? []).filter((h) => h.what === "continuation_dispatched");

/** Once the outbox has no entry pending for the dispatchers. */
const drained = (res: Resources, outbox: string) =>
  eventually(
    async () => (((await res.redis.xpending(outbox, DISPATCHER_GROUP)) as [number])[0] === 0 ? true : undefined),
    5000,
  );

describe("the hand-off decided in the accept step", () => {
  it("records continuation_dispatched with the resolution; the job carries it and the dispatcher adds none", async () => {
    const res = makeResources({ partitions: 1 });
    const k = await groups(res);
    await started(res);
    const queue = queueOf(res, continuationQueueName("acme"));
    const { wait } = await res.store.register("acme", spec("run-1", "job.done", "job-1"));
    await res.store.ingest("acme", "svc", [ev("e1", "job.done", "job-1")]);
    // on the record when ingest answered, at the resolution's time, before the job exists or not
    const w = await res.store.getWait("acme", wait.id);
    expect(w?.state).toBe("resolved");
    const [entry] = w?.history.filter((h) => h.what === "continuation_dispatched") ?? [];
    expect(entry).toMatchObject({ queue: continuationQueueName("acme"), jobId: wait.id, at: w?.resolution?.at });
    const [out] = (await res.redis.xrange(k.outbox, "-", "+")) as Array<[string, string[]]>;
    const fields = out?.[1] ?? [];
    expect(fields[fields.indexOf("q") + 1]).toBe(continuationQueueName("acme"));

    const job = await eventually(async () => (await queue.getJob(wait.id)) ?? undefined, 5000);
    await drained(res, k.outbox);
    const carried = (job.data.history as Array<{ what: string }>).filter((h) => h.what === "continuation_dispatched");
    expect(carried).toEqual([entry]);
    expect(await dispatchedOf(res, wait.id)).toEqual([entry]);
    expect(await queue.count()).toBe(1);
  });

  it("an entry decided in the accept step and claimed by another dispatcher after a crash goes to its queue once", async () => {
    const res = makeResources({ partitions: 1, claimIdleMs: 300 });
    const k = await groups(res);
    // a process whose dispatcher was handed the entry and died before adding the job
    const taken: StreamEntry[] = [];
    const dead = {
      handoff: { group: DISPATCHER_GROUP, consumer: "dead-one" },
      take: async (_p: number, entries: StreamEntry[]) => {
        taken.push(...entries);
      },
      queueOf: (tenant: string) => continuationQueueName(tenant),
    };
    res.store.acceptWith(new Matcher(res, { blockMs: 100, dispatcher: dead }).acceptor(dead));
    const { wait } = await res.store.register("acme", spec("run-1", "job.done", "job-1"));
    await res.store.ingest("acme", "svc", [ev("e1", "job.done", "job-1")]);
    await eventually(async () => (taken.length === 1 ? true : undefined));
    const [entry] = await dispatchedOf(res, wait.id);
    expect(entry).toMatchObject({ queue: continuationQueueName("acme"), jobId: wait.id });

    const dispatcher = new Dispatcher(res, { blockMs: 100, webhookConcurrency: 0 });
    await dispatcher.start();
    closing.push(() => dispatcher.stop());
    const queue = queueOf(res, continuationQueueName("acme"));
    await eventually(async () => ((await queue.getJob(wait.id)) ? true : undefined), 5000);
    await drained(res, k.outbox);
    expect(await queue.count()).toBe(1);
    expect(await dispatchedOf(res, wait.id)).toEqual([entry]);
  });

  it("a tenant with continuationGroups: the dispatcher chooses the queue and records the entry, once", async () => {
    const res = makeResources({
      partitions: 1,
      tenants: { acme: { continuationGroups: { payments: { eventTypes: ["payment.*"] } } } },
    });
    const k = await groups(res);
    await started(res);
    const paid = await res.store.register("acme", spec("run-1", "payment.done", "pay-1"));
    const done = await res.store.register("acme", spec("run-2", "job.done", "job-1"));
    await res.store.ingest("acme", "svc", [ev("e1", "payment.done", "pay-1"), ev("e2", "job.done", "job-1")]);
    const w = await res.store.getWait("acme", paid.wait.id);
    expect(w?.state).toBe("resolved");
    const payments = queueOf(res, continuationQueueName("acme", "payments"));
    const plain = queueOf(res, continuationQueueName("acme"));
    await eventually(async () => ((await payments.getJob(paid.wait.id)) ? true : undefined), 5000);
    await eventually(async () => ((await plain.getJob(done.wait.id)) ? true : undefined), 5000);
    await drained(res, k.outbox);
    const paidEntries = await dispatchedOf(res, paid.wait.id);
    expect(paidEntries).toHaveLength(1);
    expect(paidEntries[0]).toMatchObject({ queue: continuationQueueName("acme", "payments"), jobId: paid.wait.id });
    const doneEntries = await dispatchedOf(res, done.wait.id);
    expect(doneEntries).toHaveLength(1);
    expect(doneEntries[0]).toMatchObject({ queue: continuationQueueName("acme"), jobId: done.wait.id });
    for (const f of ((await res.redis.xrange(k.outbox, "-", "+")) as Array<[string, string[]]>).map(([, f]) => f)) {
      expect(f).not.toContain("q");
    }
  });
});
