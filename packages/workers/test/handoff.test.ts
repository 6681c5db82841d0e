/**
 * The chain in one process (docs/architecture.md): a matcher given the dispatcher of its
 * process has each match that settled a wait deliver the outbox's new entries to that
 * dispatcher's consumer in the same script, and hands them over without a blocking read.
 * The entries stay pending in group `dispatchers` until the dispatcher acks them, so a
 * process that dies between the match and the hand-out leaves them for a claim.
 */
import { DISPATCHER_GROUP, Pacer, type Resources, type StreamEntry } from "@rendezvous/engine";
import { eventually, makeResources } from "@rendezvous/testkit";
import { Queue } from "bullmq";
import { describe, expect, it } from "vitest";
import { continuationQueueName, Dispatcher, Matcher } from "../src/index.js";

const spec = (runId: string, correlationId: string) => ({
  runId,
  position: "step",
  eventType: "job.done",
  correlationId,
});
const ev = (id: string, correlationId: string) => ({ id, type: "job.done", correlationId, payload: { id } });

const pendingOf = async (res: Resources, key: string) =>
  ((await res.redis.xpending(key, DISPATCHER_GROUP)) as [number])[0];

async function jobOf(res: Resources, waitId: string) {
  const queue = new Queue(continuationQueueName("acme"), { connection: res.connect("q"), prefix: res.queuePrefix });
  try {
    return { job: await queue.getJob(waitId), count: await queue.count() };
  } finally {
    await queue.close();
  }
}

const handoffs = async (res: Resources) => (await res.metrics.outboxHandoffs.get()).values[0]?.value ?? 0;

describe("the match's handoff to the dispatcher of its process", () => {
  it("hands the resolution over without the outbox read: one job, acked, dispatched once", async () => {
    const res = makeResources({ partitions: 1 });
    const k = res.store.keys.partition(0);
    // the dispatcher's blocking read waits long: only the handoff can dispatch in time
    const dispatcher = new Dispatcher(res, { blockMs: 60_000 });
    const matcher = new Matcher(res, { blockMs: 100, dispatcher });
    await dispatcher.start();
    await matcher.start();
    try {
      const { wait } = await res.store.register("acme", spec("run-1", "job-1"));
      await res.store.ingest("acme", "svc", [ev("e1", "job-1")]);
      const w = await eventually(async () => {
        const x = await res.store.getWait("acme", wait.id);
        return x?.history.some((h) => h.what === "continuation_dispatched") ? x : undefined;
      });
      expect(w.state).toBe("resolved");
      expect(w.history.filter((h) => h.what === "continuation_dispatched")).toHaveLength(1);
      const { job, count } = await jobOf(res, wait.id);
      expect(job?.data.id).toBe(wait.id);
      expect(count).toBe(1);
      expect(await handoffs(res)).toBe(1);
      await eventually(async () => ((await pendingOf(res, k.outbox)) === 0 ? true : undefined));
    } finally {
      await matcher.stop();
      await dispatcher.stop();
    }
  });

  it("leaves the entries pending for a claim when the process dies between the match and the hand-out", async () => {
    const res = makeResources({ partitions: 1, claimIdleMs: 300 });
    const k = res.store.keys.partition(0);
    await res.redis.xgroup("CREATE", k.outbox, DISPATCHER_GROUP, "0", "MKSTREAM");
    // a dispatcher that dies before it hands out what the match delivered to it
    const taken: StreamEntry[] = [];
    const dead = {
      handoff: { group: DISPATCHER_GROUP, consumer: "dead-one" },
      take: async (_p: number, entries: StreamEntry[]) => {
        taken.push(...entries);
      },
    };
    const matcher = new Matcher(res, { blockMs: 100, dispatcher: dead });
    await matcher.start();
    const { wait } = await res.store.register("acme", spec("run-1", "job-1"));
    try {
      await res.store.ingest("acme", "svc", [ev("e1", "job-1")]);
      await eventually(async () => (taken.length === 1 ? true : undefined));
    } finally {
      await matcher.stop();
    }
    expect(taken[0]?.fields?.w).toBe(wait.id);
    // delivered to the dead consumer in the match: pending there, no continuation yet
    const pending = (await res.redis.xpending(k.outbox, DISPATCHER_GROUP, "-", "+", 10)) as Array<[string, string]>;
    expect(pending.map(([id, consumer]) => [id, consumer])).toEqual([[taken[0]?.id, "dead-one"]]);
    expect((await jobOf(res, wait.id)).job).toBeUndefined();
    // another dispatcher claims it after claimIdleMs and dispatches it once
    const dispatcher = new Dispatcher(res, { blockMs: 100 });
    await dispatcher.start();
    try {
      await eventually(async () => ((await jobOf(res, wait.id)).job ? true : undefined), 5000);
      await eventually(async () => ((await pendingOf(res, k.outbox)) === 0 ? true : undefined), 5000);
      const w = await res.store.getWait("acme", wait.id);
      expect(w?.history.filter((h) => h.what === "continuation_dispatched")).toHaveLength(1);
      expect((await jobOf(res, wait.id)).count).toBe(1);
    } finally {
      await dispatcher.stop();
    }
  });

  it("a handoff to a group that does not exist yet: the match stands, the entry waits for the group's read", async () => {
    const res = makeResources({ partitions: 1 });
    const taken: StreamEntry[] = [];
    const early = {
      handoff: { group: DISPATCHER_GROUP, consumer: "early" },
      take: async (_p: number, entries: StreamEntry[]) => {
        taken.push(...entries);
      },
    };
    const matcher = new Matcher(res, { blockMs: 100, dispatcher: early });
    await matcher.start();
    const { wait } = await res.store.register("acme", spec("run-1", "job-1"));
    try {
      await res.store.ingest("acme", "svc", [ev("e1", "job-1")]);
      await eventually(async () =>
        (await res.store.getWait("acme", wait.id))?.state === "resolved" ? true : undefined,
      );
    } finally {
      await matcher.stop();
    }
    expect(taken).toEqual([]);
    const dispatcher = new Dispatcher(res, { blockMs: 100 });
    await dispatcher.start();
    try {
      await eventually(async () => ((await jobOf(res, wait.id)).job ? true : undefined), 5000);
    } finally {
      await dispatcher.stop();
    }
  });

  it("offers no handoff while the dispatcher hands out a step: its own read gathers what comes meanwhile", async () => {
    const res = makeResources({ partitions: 1 });
    const pacer = new Pacer();
    // a step of another lane holds the pacer: the dispatcher's step waits behind it
    let release: () => void = () => {};
    const held = pacer.run(false, () => new Promise<void>((r) => (release = r)));
    const dispatcher = new Dispatcher(res, { blockMs: 100, pacer });
    const matcher = new Matcher(res, { blockMs: 100 });
    await dispatcher.start();
    await matcher.start();
    try {
      expect(dispatcher.handoff).toEqual({ group: DISPATCHER_GROUP, consumer: dispatcher.loop.consumer });
      const { wait } = await res.store.register("acme", spec("run-1", "job-1"));
      await res.store.ingest("acme", "svc", [ev("e1", "job-1")]);
      // read by the dispatcher, its step queued: busy
      await eventually(async () => (dispatcher.handoff === undefined ? true : undefined));
      release();
      await held;
      await eventually(async () => ((await jobOf(res, wait.id)).job ? true : undefined));
      await eventually(async () => (dispatcher.handoff !== undefined ? true : undefined));
    } finally {
      release();
      await matcher.stop();
      await dispatcher.stop();
    }
    expect(dispatcher.handoff).toBeUndefined();
  });

  it("a match that settles nothing delivers nothing", async () => {
    const res = makeResources({ partitions: 1 });
    const k = res.store.keys.partition(0);
    await res.redis.xgroup("CREATE", k.outbox, DISPATCHER_GROUP, "0", "MKSTREAM");
    const taken: StreamEntry[] = [];
    const matcher = new Matcher(res, {
      blockMs: 100,
      dispatcher: {
        handoff: { group: DISPATCHER_GROUP, consumer: "c" },
        take: async (_p, entries) => {
          taken.push(...entries);
        },
      },
    });
    await matcher.start();
    try {
      // buffered: no wait of its match key
      await res.store.ingest("acme", "svc", [ev("e1", "job-none")]);
      await eventually(async () =>
        ((await res.redis.xpending(k.stream, "matchers")) as [number])[0] === 0 &&
        (await res.redis.xlen(k.stream)) === 1
          ? true
          : undefined,
      );
    } finally {
      await matcher.stop();
    }
    expect(taken).toEqual([]);
    expect(await pendingOf(res, k.outbox)).toBe(0);
  });

  it("hands over what a match delivered even when another match of the same batch fails", async () => {
    const res = makeResources({ partitions: 1 });
    const k = res.store.keys.partition(0);
    await res.redis.xgroup("CREATE", k.outbox, DISPATCHER_GROUP, "0", "MKSTREAM");
    await res.store.register("acme", spec("run-1", "job-1"));
    const [good] = await res.store.ingest("acme", "svc", [ev("e1", "job-1")]);
    const [bad] = await res.store.ingest("acme", "svc", [ev("e2", "job-2")]);
    if (good?.status !== "accepted" || bad?.status !== "accepted") throw new Error("ingest refused");
    const goodKey = res.store.keys.eventKey("acme", "svc", "e1");
    const badKey = res.store.keys.eventKey("acme", "svc", "e2");
    // a record its script cannot decode: that match fails with a script error
    await res.redis.hset(k.events, `e:${badKey}`, "{not json");
    const taken: StreamEntry[] = [];
    const match = res.store.match(
      0,
      [
        { streamId: good.event.streamId, eventKey: goodKey },
        { streamId: bad.event.streamId, eventKey: badKey },
      ],
      undefined,
      { to: { group: DISPATCHER_GROUP, consumer: "c" }, take: (entries) => taken.push(...entries) },
    );
    await expect(match).rejects.toThrow();
    // the first match's outbox entry was delivered to "c" and handed over, not left for a claim
    expect(taken).toHaveLength(1);
    expect(await pendingOf(res, k.outbox)).toBe(1);
  });
});
