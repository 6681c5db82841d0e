/**
 * Compaction of completed continuation jobs (docs/api.md, Continuations): the scheduler
 * reduces a completed job to a stub that keeps its key, its `completed` membership and
 * its timestamps; a re-dispatch of the same wait still finds its twin; jobs not completed,
 * or completed too recently, are left whole; the retention knob sets BullMQ's age.
 */
import type { ConfigInput } from "@rendezvous/engine";
import { eventually, makeResources } from "@rendezvous/testkit";
import { Queue, Worker } from "bullmq";
import { afterEach, describe, expect, it, vi } from "vitest";
import { continuationQueueName, Dispatcher, Scheduler } from "../src/index.js";
import { COMPACT_BATCH, Compaction } from "../src/retention.js";

type Res = ReturnType<typeof makeResources>;
const QUEUE = continuationQueueName("acme");
const closers: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

function setup(config: Partial<ConfigInput> = {}) {
  const res = makeResources({ tenants: { acme: { hostKeys: ["hk_compaction"] } }, ...config });
  const queue = new Queue(QUEUE, { connection: res.connect("q"), prefix: res.queuePrefix });
  const dispatcher = new Dispatcher(res, { blockMs: 100, webhookConcurrency: 0 });
  const scheduler = new Scheduler(res, { sweepIntervalMs: 3_600_000 });
  closers.push(
    () => queue.close(),
    () => dispatcher.stop(),
  );
  return { res, queue, dispatcher, scheduler, jobKey: (id: string) => `${res.queuePrefix}:${QUEUE}:${id}` };
}

/** Registers and resolves `n` waits (direct delivery): their outbox entries are written. */
async function settle(res: Res, n: number, tag: string): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < n; i++) {
    const correlationId = `c-${tag}-${i}`;
    const { wait } = await res.store.register("acme", {
      runId: `r-${tag}-${i}`,
      position: "p",
      eventType: "job.done",
      correlationId,
      metadata: { note: "x".repeat(200) },
    });
    await res.store.deliver("acme", { eventType: "job.done", correlationId, payload: { tag, i } });
    ids.push(wait.id);
  }
  return ids;
}

/** `settle`, then until their jobs are in the queue (the dispatcher running). */
async function resolved(res: Res, queue: Queue, n: number, tag: string): Promise<string[]> {
  const ids = await settle(res, n, tag);
  await eventually(async () => {
    const jobs = await Promise.all(ids.map((id) => queue.getJob(id)));
    return jobs.every((j) => j !== undefined) || undefined;
  });
  return ids;
}

/** A host's worker: consumes each wait, then completes its job; `fail` makes the processor throw instead. */
function hostWorker(res: Res, fail = false): Worker {
  const worker = new Worker(
    QUEUE,
    async (job) => {
      if (fail) throw new Error("host failure");
      await res.store.consume("acme", job.id as string, "host-1");
      return { big: "r".repeat(300) };
    },
    { connection: res.connect("worker", { blocking: true }), prefix: res.queuePrefix, concurrency: 4 },
  );
  closers.push(() => worker.close());
  return worker;
}

describe("compaction of completed continuation jobs", () => {
  it("reduces a completed job to its stub: key, completed membership and timestamps kept, the Wait gone", async () => {
    const { res, queue, dispatcher, scheduler, jobKey } = setup({ continuationCompactAfterMs: 0 });
    await dispatcher.start();
    const [id] = await resolved(res, queue, 1, "a");
    const waitId = id as string;
    const worker = hostWorker(res);
    await eventually(async () => (await queue.getCompletedCount()) === 1 || undefined);
    await worker.close();
    const whole = await res.redis.hgetall(jobKey(waitId));
    const wholeBytes = Number(await res.redis.memory("USAGE", jobKey(waitId), "SAMPLES", "0"));
    expect(JSON.parse(whole.data as string).id).toBe(waitId);

    expect(await scheduler.compact()).toBe(1);
    const stub = await res.redis.hgetall(jobKey(waitId));
    expect(stub).toEqual({
      name: "continuation",
      data: '{"compacted":true}',
      timestamp: whole.timestamp,
      processedOn: whole.processedOn,
      finishedOn: whole.finishedOn,
      atm: whole.atm,
    });
    expect(await res.redis.object("ENCODING", jobKey(waitId))).toBe("listpack");
    const bytes = Number(await res.redis.memory("USAGE", jobKey(waitId), "SAMPLES", "0"));
    expect(bytes).toBeLessThan(300);
    expect(bytes).toBeLessThan(wholeBytes / 3);
    expect(await res.redis.zscore(`${res.queuePrefix}:${QUEUE}:completed`, waitId)).toBe(whole.finishedOn);
    // BullMQ reads it as a completed job whose data is the stub
    const job = await queue.getJob(waitId);
    expect(job?.data).toEqual({ compacted: true });
    expect(await job?.getState()).toBe("completed");
    expect(job?.finishedOn).toBe(Number(whole.finishedOn));
    // the wait record keeps the truth, its consumption included
    const wait = await res.store.getWait("acme", waitId);
    expect(wait?.consumption?.by).toBe("host-1");
    // a second pass finds nothing more to do
    expect(await scheduler.compact()).toBe(0);
  });

  it("the scheduler's sweep compacts (retention's last step)", async () => {
    const { res, queue, dispatcher, scheduler, jobKey } = setup({ continuationCompactAfterMs: 0 });
    await dispatcher.start();
    const [waitId] = (await resolved(res, queue, 1, "s")) as [string];
    const worker = hostWorker(res);
    await eventually(async () => (await queue.getCompletedCount()) === 1 || undefined);
    await worker.close();
    await scheduler.sweep();
    expect(await res.redis.hget(jobKey(waitId), "data")).toBe('{"compacted":true}');
  });

  it("a re-dispatch of a compacted job's wait adds no job and no second continuation_dispatched", async () => {
    const { res, queue, dispatcher, scheduler, jobKey } = setup({ continuationCompactAfterMs: 0 });
    const [waitId] = (await settle(res, 1, "b")) as [string];
    const outbox = res.store.keys.partition(res.store.keys.waitPartition(waitId) as number).outbox;
    const [entry] = await res.redis.xrange(outbox, "-", "+");
    if (!entry) throw new Error("no outbox entry");
    await dispatcher.start();
    await eventually(async () => (await queue.getJob(waitId)) ?? undefined);
    const worker = hostWorker(res);
    await eventually(async () => (await queue.getCompletedCount()) === 1 || undefined);
    await worker.close();
    expect(await scheduler.compact()).toBe(1);
    // the same entry once more, as after a dispatcher crash before its ack
    const again = (await res.redis.xadd(outbox, "*", ...entry[1])) as string;
    await eventually(async () => {
      const [pending] = (await res.redis.xpending(outbox, "dispatchers")) as [number];
      const groups = (await res.redis.xinfo("GROUPS", outbox)) as unknown[][];
      const g = groups[0] ?? [];
      return (g[g.indexOf("last-delivered-id") + 1] === again && pending === 0) || undefined;
    });
    expect(await queue.getJobCounts("waiting", "active", "completed")).toEqual({ waiting: 0, active: 0, completed: 1 });
    expect(await res.redis.hget(jobKey(waitId), "data")).toBe('{"compacted":true}');
    const wait = await res.store.getWait("acme", waitId);
    expect(wait?.history.filter((h) => h.what === "continuation_dispatched")).toHaveLength(1);
  });

  it("leaves waiting, active and failed jobs whole, and completed ones until compactAfterMs has passed", async () => {
    const { res, queue, dispatcher, scheduler, jobKey } = setup({ continuationCompactAfterMs: 60_000 });
    await dispatcher.start();
    const [failing] = await resolved(res, queue, 1, "f");
    const failer = hostWorker(res, true);
    await eventually(async () => (await queue.getFailedCount()) === 1 || undefined);
    await failer.close();
    const [done] = await resolved(res, queue, 1, "d");
    const completer = hostWorker(res);
    await eventually(async () => (await queue.getCompletedCount()) === 1 || undefined);
    await completer.close();
    // one held active by a worker that does not return, one left waiting
    const [held] = await resolved(res, queue, 1, "h");
    let release: () => void = () => undefined;
    const holder = new Worker(QUEUE, () => new Promise<void>((r) => (release = r)), {
      connection: res.connect("holder", { blocking: true }),
      prefix: res.queuePrefix,
    });
    closers.push(() => holder.close());
    await eventually(async () => (await queue.getActiveCount()) === 1 || undefined);
    await holder.pause(true);
    const [waiting] = await resolved(res, queue, 1, "w");
    const ids = [failing, done, held, waiting] as string[];
    const before = await Promise.all(ids.map((id) => res.redis.hgetall(jobKey(id))));

    // completed 0 s ago: not yet
    expect(await scheduler.compact()).toBe(0);
    expect(await Promise.all(ids.map((id) => res.redis.hgetall(jobKey(id))))).toEqual(before);
    // a minute on: the completed one only
    expect(await scheduler.compact(Date.now() + 61_000)).toBe(1);
    const after = await Promise.all(ids.map((id) => res.redis.hgetall(jobKey(id))));
    expect(after[1]?.data).toBe('{"compacted":true}');
    expect([after[0], after[2], after[3]]).toEqual([before[0], before[2], before[3]]);
    expect(JSON.parse(after[0]?.data as string).id).toBe(failing);
    release();
  });

  it("continuationRetentionMs is BullMQ's removeOnComplete age; compaction at or over it is off", async () => {
    const { res, queue, dispatcher, scheduler } = setup({
      continuationRetentionMs: 120_000,
      continuationCompactAfterMs: 120_000,
    });
    await dispatcher.start();
    const [id] = await resolved(res, queue, 1, "k");
    const job = await queue.getJob(id as string);
    expect(job?.opts.removeOnComplete).toEqual({ age: 120 });
    const worker = hostWorker(res);
    await eventually(async () => (await queue.getCompletedCount()) === 1 || undefined);
    await worker.close();
    expect(await scheduler.compact(Date.now() + 3_600_000)).toBe(0);
    expect((await queue.getJob(id as string))?.data.id).toBe(id);
  });

  it("takes a backlog in bounded calls, each from where the last stopped", async () => {
    const { res, queue, dispatcher, jobKey } = setup({ continuationCompactAfterMs: 0 });
    await dispatcher.start();
    const ids = await resolved(res, queue, 7, "m");
    const worker = hostWorker(res);
    await eventually(async () => (await queue.getCompletedCount()) === 7 || undefined);
    await worker.close();
    const { compactContinuations } = await import("@rendezvous/engine");
    const calls = [];
    for (let i = 0; i < 5; i++) {
      const [r] = await compactContinuations(res.redis, res.queuePrefix, [QUEUE], Date.now(), 3);
      calls.push([r?.compacted, r?.examined, r?.more]);
    }
    expect(calls).toEqual([
      [3, 3, true],
      [3, 3, true],
      [1, 1, false],
      [0, 0, false],
      [0, 0, false],
    ]);
    for (const id of ids) expect(await res.redis.hget(jobKey(id), "data")).toBe('{"compacted":true}');
  });

  it("goes on after the cursor's job was removed by age, from the first job of its finish time", async () => {
    const { res, queue, dispatcher, jobKey } = setup({ continuationCompactAfterMs: 0 });
    await dispatcher.start();
    await resolved(res, queue, 5, "g");
    const worker = hostWorker(res);
    await eventually(async () => (await queue.getCompletedCount()) === 5 || undefined);
    await worker.close();
    const { compactContinuations } = await import("@rendezvous/engine");
    const completed = `${res.queuePrefix}:${QUEUE}:completed`;
    const first = await compactContinuations(res.redis, res.queuePrefix, [QUEUE], Date.now(), 2);
    expect(first[0]?.compacted).toBe(2);
    // BullMQ's age removal takes the two oldest (the cursor's job among them)
    const gone = await res.redis.zrange(completed, "0", "1");
    await res.redis.zrem(completed, ...gone);
    await res.redis.del(...gone.map(jobKey));
    const rest = await res.redis.zrange(completed, "0", "-1");
    const next = await compactContinuations(res.redis, res.queuePrefix, [QUEUE], Date.now(), 10);
    expect(next[0]?.compacted).toBe(3);
    for (const id of rest) expect(await res.redis.hget(jobKey(id), "data")).toBe('{"compacted":true}');
  });

  it("compacts a late finisher: a job entering `completed` behind the cursor, within the skew window", async () => {
    const { res, queue, dispatcher, jobKey } = setup({ continuationCompactAfterMs: 0 });
    await dispatcher.start();
    await resolved(res, queue, 3, "l");
    const worker = hostWorker(res);
    await eventually(async () => (await queue.getCompletedCount()) === 3 || undefined);
    const { compactContinuations, compactionCursorKey } = await import("@rendezvous/engine");
    const first = await compactContinuations(res.redis, res.queuePrefix, [QUEUE], Date.now(), 10);
    expect(first[0]?.compacted).toBe(3);
    const cursorScore = Number(await res.redis.hget(compactionCursorKey(res.queuePrefix, QUEUE), "score"));
    // two more finish on hosts whose clocks are behind: 5 s (within the window) and 2 min (beyond)
    const [late, later] = (await resolved(res, queue, 2, "L")) as [string, string];
    await eventually(async () => (await queue.getCompletedCount()) === 5 || undefined);
    await worker.close();
    const completed = `${res.queuePrefix}:${QUEUE}:completed`;
    await res.redis.zadd(completed, "XX", String(cursorScore - 5_000), late);
    await res.redis.zadd(completed, "XX", String(cursorScore - 120_000), later);
    const next = await compactContinuations(res.redis, res.queuePrefix, [QUEUE], Date.now(), 10);
    expect(next[0]).toMatchObject({ compacted: 1, examined: 0, more: false });
    expect(await res.redis.hget(jobKey(late), "data")).toBe('{"compacted":true}');
    // beyond the window: whole until BullMQ removes it by age (the documented bound)
    expect(JSON.parse((await res.redis.hget(jobKey(later), "data")) as string).id).toBe(later);
    // a call after that finds nothing more to do behind the cursor
    const idle = await compactContinuations(res.redis, res.queuePrefix, [QUEUE], Date.now(), 10);
    expect(idle[0]?.compacted).toBe(0);
  });

  it("walks the window behind the cursor over several calls when it holds more than the limit", async () => {
    const { res, queue, dispatcher, jobKey } = setup({ continuationCompactAfterMs: 0 });
    await dispatcher.start();
    await resolved(res, queue, 2, "s");
    const worker = hostWorker(res);
    await eventually(async () => (await queue.getCompletedCount()) === 2 || undefined);
    const { compactContinuations, compactionCursorKey } = await import("@rendezvous/engine");
    const call = async (limit: number) =>
      (await compactContinuations(res.redis, res.queuePrefix, [QUEUE], Date.now(), limit))[0];
    expect((await call(10))?.compacted).toBe(2);
    const cursorScore = Number(await res.redis.hget(compactionCursorKey(res.queuePrefix, QUEUE), "score"));
    const late = await resolved(res, queue, 3, "S");
    await eventually(async () => (await queue.getCompletedCount()) === 5 || undefined);
    await worker.close();
    const completed = `${res.queuePrefix}:${QUEUE}:completed`;
    for (const [i, id] of late.entries()) await res.redis.zadd(completed, "XX", String(cursorScore - 3_000 + i), id);
    // the window: the three late ones, then the two compacted (the cursor's job among them)
    expect(await call(2)).toMatchObject({ compacted: 2, rescanned: 2, examined: 0 });
    expect(await call(2)).toMatchObject({ compacted: 1, rescanned: 2, examined: 0 });
    expect(await call(2)).toMatchObject({ compacted: 0, rescanned: 1, examined: 0 });
    for (const id of late) expect(await res.redis.hget(jobKey(id), "data")).toBe('{"compacted":true}');
  });

  it("sends at most 16 calls per round trip", async () => {
    const { res } = setup();
    const { compactContinuations } = await import("@rendezvous/engine");
    const pipelines = vi.spyOn(res.redis, "pipeline");
    const queues = Array.from({ length: 40 }, (_, i) => `continuations.none${i}`);
    const results = await compactContinuations(res.redis, res.queuePrefix, queues, Date.now(), 10);
    expect(results.map((r) => r.queue)).toEqual(queues);
    expect(pipelines).toHaveBeenCalledTimes(3);
    pipelines.mockRestore();
  });

  it("takes a backlog in one run, in rounds of COMPACT_BATCH jobs (a call per round trip)", async () => {
    const { res, queue, dispatcher, jobKey } = setup({ continuationCompactAfterMs: 0 });
    await dispatcher.start();
    const n = 2 * COMPACT_BATCH + 5;
    const ids = await resolved(res, queue, n, "r");
    const worker = hostWorker(res);
    await eventually(async () => (await queue.getCompletedCount()) === n || undefined);
    await worker.close();
    const pipelines = vi.spyOn(res.redis, "pipeline");
    expect(await new Compaction().run(res.redis, res.queuePrefix, [QUEUE], 0)).toBe(n);
    // two full calls, then the rest: each call holds Redis for at most COMPACT_BATCH jobs
    expect(pipelines).toHaveBeenCalledTimes(3);
    pipelines.mockRestore();
    for (const id of ids) expect(await res.redis.hget(jobKey(id), "data")).toBe('{"compacted":true}');
  });

  it("keeps to a budget of calls per run, the next run going on with the queues left", async () => {
    const { res, queue, dispatcher } = setup({ continuationCompactAfterMs: 0 });
    await dispatcher.start();
    await resolved(res, queue, 2, "b");
    const worker = hostWorker(res);
    await eventually(async () => (await queue.getCompletedCount()) === 2 || undefined);
    await worker.close();
    const compaction = new Compaction(2);
    const queues = ["continuations.none1", "continuations.none2", QUEUE];
    expect(await compaction.run(res.redis, res.queuePrefix, queues, 0)).toBe(0);
    expect(await compaction.run(res.redis, res.queuePrefix, queues, 0)).toBe(2);
  });
});
