/**
 * A step's jobs added in one script call (job-adds.ts): against a private redis-server (its
 * command counts are this file's alone), the jobs are BullMQ's own — the same hash, list
 * place and events as `Queue.add` makes — in one EVALSHA per 16 jobs, idempotent by job id,
 * taken by a BullMQ Worker; options BullMQ adds by another script go BullMQ's own way.
 */
import { type RedisServer, startRedisServer } from "@rendezvous/engine";
import { eventually } from "@rendezvous/testkit";
import { Queue, Worker } from "bullmq";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { addStepJobs, addStepJobsRecorded, type JobToAdd, type StepRecord } from "../src/job-adds.js";

let server: RedisServer;
let conn: Redis;
const closers: Array<() => Promise<unknown>> = [];

beforeAll(async () => {
  server = await startRedisServer();
  conn = new Redis(server.url, { maxRetriesPerRequest: null });
});
afterAll(async () => {
  for (const close of closers.reverse()) await close();
  conn.disconnect();
  await server.stop();
});

function queue(name: string): Queue {
  const q = new Queue(name, { connection: conn, prefix: "t" });
  closers.push(() => q.close());
  return q;
}

const job = (id: string, extra: Record<string, unknown> = {}): JobToAdd => ({
  name: "continuation",
  data: { id, tenant: "acme", metadata: { note: 'ü ✓ "quoted"', n: 1.5 } },
  opts: { jobId: id, removeOnComplete: { age: 86_400 }, removeOnFail: { age: 604_800 }, ...extra },
});

const noWarning = (msg: string) => {
  throw new Error(`warned: ${msg}`);
};

async function evalCalls(): Promise<number> {
  const stats = await conn.info("commandstats");
  return (
    Number(/cmdstat_evalsha:calls=(\d+)/.exec(stats)?.[1] ?? 0) +
    Number(/cmdstat_eval:calls=(\d+)/.exec(stats)?.[1] ?? 0)
  );
}

/** A job's hash without its creation time; its place in the wait list; the events' names. */
async function shape(q: Queue, id: string) {
  const { timestamp, ...hash } = await conn.hgetall(`t:${q.name}:${id}`);
  const wait = await conn.lrange(`t:${q.name}:wait`, 0, -1);
  return { hash, at: wait.indexOf(id), hasTimestamp: timestamp !== undefined };
}

async function eventNames(q: Queue): Promise<string[]> {
  const entries = await conn.xrange(`t:${q.name}:events`, "-", "+");
  return entries.map(([, fields]) => fields[1] as string);
}

describe("jobs added in one script call", () => {
  it("are BullMQ's own jobs, as Queue.add makes them, in one call per 16 jobs", async () => {
    const ours = queue("ours");
    const theirs = queue("theirs");
    await ours.waitUntilReady();
    await theirs.waitUntilReady();
    const ids = Array.from({ length: 20 }, (_, i) => `w${i}`);
    for (const id of ids) await theirs.add("continuation", job(id).data, job(id).opts);
    const before = await evalCalls();
    const replies = await addStepJobs(
      ours,
      conn,
      ids.map((id) => job(id)),
      noWarning,
    );
    expect(await evalCalls()).toBe(before + 2);
    expect(replies).toEqual(ids);
    for (const id of ids) {
      const [a, b] = [await shape(ours, id), await shape(theirs, id)];
      expect(a).toEqual(b);
      expect(a.hasTimestamp).toBe(true);
      expect(JSON.parse(a.hash.data as string)).toEqual(job(id).data);
    }
    expect(await eventNames(ours)).toEqual(await eventNames(theirs));
    expect(await ours.getJobCounts("wait")).toEqual({ wait: 20 });
  });

  it("adds nothing for a job id already in the queue, waiting or completed", async () => {
    const q = queue("again");
    await q.waitUntilReady();
    await addStepJobs(q, conn, [job("a"), job("b")], noWarning);
    const worker = new Worker("again", async () => "done", { connection: conn.duplicate(), prefix: "t" });
    closers.push(() => worker.close());
    await eventually(async () => ((await q.getJobCounts("completed")).completed === 2 ? true : undefined));
    await worker.close();
    const replies = await addStepJobs(
      q,
      conn,
      [{ ...job("a"), data: { changed: true } }, job("b"), job("c")],
      noWarning,
    );
    expect(replies).toEqual(["a", "b", "c"]);
    expect(await q.getJobCounts("completed", "wait")).toEqual({ completed: 2, wait: 1 });
    expect((await q.getJob("a"))?.data).toEqual(job("a").data);
    expect(await eventNames(q)).toContain("duplicated");
  });

  it("are taken by a BullMQ Worker with their data", async () => {
    const q = queue("taken");
    await q.waitUntilReady();
    const seen = new Map<string, unknown>();
    const worker = new Worker(
      "taken",
      async (j) => {
        seen.set(j.id as string, j.data);
      },
      { connection: conn.duplicate(), prefix: "t", concurrency: 5 },
    );
    closers.push(() => worker.close());
    const ids = ["x1", "x2", "x3", "x4", "x5", "x6"];
    await addStepJobs(
      q,
      conn,
      ids.map((id) => job(id)),
      noWarning,
    );
    await eventually(() => (seen.size === ids.length ? true : undefined));
    // (closed here: a running worker's own scripts, its stalled-job check among them, would
    // count in the next test's script calls)
    await worker.close();
    for (const id of ids) expect(seen.get(id)).toEqual(job(id).data);
  });

  it("leaves jobs that BullMQ adds by another script (a delay) to BullMQ's own way, with a warning", async () => {
    const q = queue("delayed");
    await q.waitUntilReady();
    const warn = vi.fn();
    const bulk = vi.spyOn(q, "addBulk");
    const jobs = [job("d1", { delay: 60_000 }), job("d2", { delay: 60_000 })];
    const before = await evalCalls();
    await addStepJobs(q, conn, jobs, warn);
    expect(bulk).toHaveBeenCalledTimes(1);
    expect(warn).toHaveBeenCalledTimes(1);
    // (BullMQ's own: a call per job; none of the wrapped script)
    expect(await evalCalls()).toBe(before + 2);
    expect(await q.getJobCounts("delayed", "wait")).toEqual({ delayed: 2, wait: 0 });
  });

  it("leaves a step of one job to BullMQ's own add, without a warning", async () => {
    const q = queue("single");
    await q.waitUntilReady();
    const add = vi.spyOn(q, "add");
    await addStepJobs(q, conn, [job("s1")], noWarning);
    expect(add).toHaveBeenCalledTimes(1);
    expect(await q.getJobCounts("wait")).toEqual({ wait: 1 });
  });
});

describe("a step in one call (STEP_LUA): jobs, timeline entries and ack together", () => {
  const WAITS = "step:w";
  const OUTBOX = "step:o";
  const GROUP = "dispatchers";

  /** Two settled waits, an outbox entry each delivered to a consumer (pending), and the step's record. */
  async function step(ids: string[]): Promise<StepRecord> {
    await conn.del(WAITS, OUTBOX);
    await conn.xgroup("CREATE", OUTBOX, GROUP, "0", "MKSTREAM");
    for (const id of ids) {
      await conn.hset(WAITS, id, JSON.stringify({ s: "r", id }));
      await conn.xadd(OUTBOX, "*", "w", id);
    }
    const read = (await conn.xreadgroup("GROUP", GROUP, "c", "STREAMS", OUTBOX, ">")) as Array<
      [string, Array<[string, unknown]>]
    > | null;
    const entryIds = read?.[0]?.[1].map(([id]) => id) ?? [];
    // annotateWaits' ARGV as its header lists them: now, what, once, then wait id and detail pairs
    const pairs = ids.flatMap((id) => [id, JSON.stringify({ queue: "q", jobId: id })]);
    return {
      annotate: { script: "annotateWaits", keys: [WAITS], args: ["", "continuation_dispatched", "1", ...pairs] },
      ack: { key: OUTBOX, group: GROUP, ids: entryIds },
    };
  }
  const entriesOf = async (id: string) =>
    ((await conn.hget(WAITS, id)) ?? "").split("continuation_dispatched").length - 1;
  const pending = async () => ((await conn.xpending(OUTBOX, GROUP)) as [number])[0];

  it("adds the jobs, records each wait's continuation_dispatched once and acks the entries, in one call; again: nothing new", async () => {
    const q = queue("recorded");
    await q.waitUntilReady();
    const ids = ["r1", "r2"];
    const record = await step(ids);
    const run = () =>
      addStepJobsRecorded(
        q,
        conn,
        ids.map((id) => job(id)),
        record,
        noWarning,
      );
    expect(await pending()).toBe(2);
    const before = await evalCalls();
    expect(await run()).toBe(true);
    expect(await evalCalls()).toBe(before + 1);
    expect(await q.getJobCounts("wait")).toEqual({ wait: 2 });
    for (const id of ids) expect(await entriesOf(id)).toBe(1);
    expect(await pending()).toBe(0);
    // the same step again (an entry handled twice after a crash): no second job, no second entry
    expect(await run()).toBe(true);
    expect(await q.getJobCounts("wait")).toEqual({ wait: 2 });
    for (const id of ids) expect(await entriesOf(id)).toBe(1);
    expect((await q.getJob("r1"))?.data).toMatchObject({ id: "r1" });
  });

  it("records nothing and acks nothing when BullMQ refuses a job (a parent that does not exist)", async () => {
    const q = queue("refused");
    await q.waitUntilReady();
    const ids = ["f1", "f2"];
    const record = await step(ids);
    const jobs = [job("f1"), job("f2", { parent: { id: "missing", queue: "t:nowhere" } })];
    await expect(addStepJobsRecorded(q, conn, jobs, record, noWarning)).rejects.toThrow(/addStandardJob answered -5/);
    for (const id of ids) expect(await entriesOf(id)).toBe(0);
    expect(await pending()).toBe(2);
  });
});
