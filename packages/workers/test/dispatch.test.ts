import { eventually, makeResources } from "@rendezvous/testkit";
import { Queue } from "bullmq";
import { describe, expect, it } from "vitest";
import { continuationQueueName, Dispatcher } from "../src/index.js";

const spec = (runId: string, correlationId: string) => ({
  runId,
  position: "step",
  eventType: "job.done",
  correlationId,
});

type Res = ReturnType<typeof makeResources>;

/** Registers a wait and resolves it by direct delivery: its outbox entry is written, nothing dispatches it yet. */
async function settledWait(res: Res, runId: string) {
  const { wait } = await res.store.register("acme", spec(runId, `job-${runId}`));
  await res.store.deliver("acme", { eventType: "job.done", correlationId: `job-${runId}`, payload: { runId } });
  const settled = await res.store.getWait("acme", wait.id);
  if (!settled) throw new Error("wait missing");
  const k = res.store.keys.partition(res.store.keys.waitPartition(wait.id) as number);
  return { wait: settled, outbox: k.outbox, waits: k.waits };
}

async function dispatchedJob(res: Res, waitId: string) {
  const dispatcher = new Dispatcher(res, { blockMs: 100 });
  await dispatcher.start();
  try {
    const wait = await eventually(async () => {
      const w = await res.store.getWait("acme", waitId);
      return w?.history.some((h) => h.what === "continuation_dispatched") ? w : undefined;
    });
    const queue = new Queue(continuationQueueName("acme"), { connection: res.connect("q"), prefix: res.queuePrefix });
    const job = await queue.getJob(waitId);
    await queue.close();
    const k = res.store.keys.partition(res.store.keys.waitPartition(waitId) as number);
    await eventually(async () => ((await res.redis.xpending(k.outbox, "dispatchers")) as [number])[0] === 0);
    return { wait, job };
  } finally {
    await dispatcher.stop();
  }
}

describe("dispatch from the outbox", () => {
  it("an outbox entry carries the settled wait record; the job's data is the Wait as settled", async () => {
    const res = makeResources();
    const { wait, outbox, waits } = await settledWait(res, "r1");
    const entries = await res.redis.xrange(outbox, "-", "+");
    expect(entries).toHaveLength(1);
    const fields = entries[0]?.[1] as string[];
    expect(fields.slice(0, 4)).toEqual(["w", wait.id, "k", "d"]);
    expect(fields[4]).toBe("r");
    // the record as the waits hash holds it
    expect(fields[5]).toBe(await res.redis.hget(waits, wait.id));
    const { wait: after, job } = await dispatchedJob(res, wait.id);
    expect(job?.name).toBe("continuation");
    expect(job?.data).toEqual(JSON.parse(JSON.stringify(wait)));
    expect(after.history.filter((h) => h.what === "continuation_dispatched")).toHaveLength(1);
  });

  it("an outbox entry of the earlier form (w and k only) is dispatched from a read of its wait", async () => {
    const res = makeResources();
    const { wait, outbox } = await settledWait(res, "r2");
    const [entry] = await res.redis.xrange(outbox, "-", "+");
    await res.redis.xdel(outbox, entry?.[0] as string);
    await res.redis.xadd(outbox, "*", "w", wait.id, "k", "d");
    const { wait: after, job } = await dispatchedJob(res, wait.id);
    expect(job?.data).toEqual(JSON.parse(JSON.stringify(wait)));
    expect(after.history.filter((h) => h.what === "continuation_dispatched")).toHaveLength(1);
  });

  it("an entry handled again (same job id) adds no job and no second continuation_dispatched", async () => {
    const res = makeResources();
    const { wait, outbox } = await settledWait(res, "r3");
    const [entry] = await res.redis.xrange(outbox, "-", "+");
    if (!entry) throw new Error("no outbox entry");
    await dispatchedJob(res, wait.id);
    // the same entry once more, as after a crash before its ack
    const id = (await res.redis.xadd(outbox, "*", ...entry[1])) as string;
    const dispatcher = new Dispatcher(res, { blockMs: 100 });
    await dispatcher.start();
    try {
      await eventually(async () => {
        const [group] = (await res.redis.xinfo("GROUPS", outbox)) as unknown[][];
        const delivered = group?.[(group?.indexOf("last-delivered-id") ?? 0) + 1];
        const [pending] = (await res.redis.xpending(outbox, "dispatchers")) as [number];
        return delivered === id && pending === 0;
      });
    } finally {
      await dispatcher.stop();
    }
    const again = await res.store.getWait("acme", wait.id);
    expect(again?.history.filter((h) => h.what === "continuation_dispatched")).toHaveLength(1);
    const queue = new Queue(continuationQueueName("acme"), { connection: res.connect("q"), prefix: res.queuePrefix });
    expect(await queue.getJobCounts("waiting")).toEqual({ waiting: 1 });
    await queue.close();
  });

  it("a step of 40 entries of one partition, one without its wait: 40 jobs, each timeline entry once, every entry acked", async () => {
    const res = makeResources({ partitions: 1 });
    const ids: string[] = [];
    for (let i = 0; i < 40; i++) ids.push((await settledWait(res, `many-${i}`)).wait.id);
    const k = res.store.keys.partition(0);
    // an entry whose wait is gone (expired): acked with the others, no job
    await res.redis.xadd(k.outbox, "*", "w", `${ids[0]?.slice(0, -4)}zzzz`, "k", "d");
    const dispatcher = new Dispatcher(res, { blockMs: 100 });
    await dispatcher.start();
    try {
      await eventually(async () => {
        const [group] = (await res.redis.xinfo("GROUPS", k.outbox)) as unknown[][];
        const read = group?.[(group?.indexOf("entries-read") ?? 0) + 1];
        const [pending] = (await res.redis.xpending(k.outbox, "dispatchers")) as [number];
        return read === 41 && pending === 0;
      });
    } finally {
      await dispatcher.stop();
    }
    const queue = new Queue(continuationQueueName("acme"), { connection: res.connect("q"), prefix: res.queuePrefix });
    expect(await queue.getJobCounts("waiting")).toEqual({ waiting: 40 });
    await queue.close();
    for (const id of ids) {
      const w = await res.store.getWait("acme", id);
      expect(w?.history.filter((h) => h.what === "continuation_dispatched")).toHaveLength(1);
    }
  });
});
