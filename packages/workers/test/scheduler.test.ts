import { Pacer } from "@rendezvous/engine";
import { eventually, makeResources } from "@rendezvous/testkit";
import { describe, expect, it } from "vitest";
import { expireOutlived, Scheduler } from "../src/index.js";

const spec = (runId: string, correlationId: string, timeoutMs: number) => ({
  runId,
  position: "step",
  eventType: "job.done",
  correlationId,
  timeoutMs,
});

describe("scheduler", () => {
  it("times waits out close to their deadline through bucket jobs", async () => {
    const res = makeResources();
    const scheduler = new Scheduler(res, { sweepIntervalMs: 60_000 });
    await scheduler.start();
    try {
      const waits = [];
      for (let i = 0; i < 20; i++) {
        const { wait } = await res.store.register("acme", spec(`run-${i}`, `job-${i}`, 200 + i * 10));
        waits.push(wait);
      }
      const scheduled = await scheduler.schedule(
        waits.map((w) => ({
          partition: res.store.keys.waitPartition(w.id) as number,
          deadline: Date.parse(w.deadline ?? ""),
        })),
      );
      expect(scheduled).toBeGreaterThan(0);
      for (const w of waits) {
        const done = await eventually(async () => {
          const x = await res.store.getWait("acme", w.id);
          return x?.state === "timed_out" ? x : undefined;
        });
        const lateness = Date.parse(done.resolution?.at ?? "") - Date.parse(w.deadline ?? "");
        expect(lateness).toBeGreaterThanOrEqual(0);
        expect(lateness).toBeLessThan(1000);
      }
    } finally {
      await scheduler.stop();
    }
  });

  it("backlog: an event accepted before the deadline wins over the timeout when the matcher catches up", async () => {
    const res = makeResources();
    const scheduler = new Scheduler(res, { sweepIntervalMs: 60_000, retryMs: 50 });
    await scheduler.start();
    try {
      const { wait } = await res.store.register("acme", spec("run-1", "job-1", 300));
      const p = res.store.keys.waitPartition(wait.id) as number;
      await scheduler.schedule([{ deadline: Date.parse(wait.deadline ?? "") }]);
      // accepted on time; no matcher runs
      const [accepted] = await res.store.ingest("acme", "svc", [
        { id: "e1", type: "job.done", correlationId: "job-1" },
      ]);
      expect(accepted?.status).toBe("accepted");
      await new Promise((r) => setTimeout(r, 700));
      expect((await res.store.getWait("acme", wait.id))?.state).toBe("waiting");
      // the matcher catches up
      const entries = await res.redis.xrange(res.store.keys.partition(p).stream, "-", "+");
      const [id, fields] = entries[0] as [string, string[]];
      await res.store.match(p, [{ streamId: id, eventKey: fields[1] as string }]);
      const w = await res.store.getWait("acme", wait.id);
      expect(w?.state).toBe("resolved");
      expect(w?.resolution?.kind).toBe("event");
      await new Promise((r) => setTimeout(r, 200));
      expect((await res.store.getWait("acme", wait.id))?.state).toBe("resolved");
    } finally {
      await scheduler.stop();
    }
  });

  it("the sweeper fires a wait whose timeout job was never scheduled, and says so on its timeline", async () => {
    const res = makeResources();
    const scheduler = new Scheduler(res, { sweepIntervalMs: 100, graceMs: 100 });
    const { wait } = await res.store.register("acme", spec("run-1", "job-1", 50));
    await new Promise((r) => setTimeout(r, 300));
    await scheduler.start();
    try {
      const w = await eventually(async () => {
        const x = await res.store.getWait("acme", wait.id);
        return x?.state === "timed_out" ? x : undefined;
      });
      expect(w.history.map((h) => h.what)).toEqual(["registered", "sweeper_rescheduled", "resolved"]);
    } finally {
      await scheduler.stop();
    }
  });

  it("wakes itself at the next deadline a pass read: waits time out on time with no bucket job running", async () => {
    const res = makeResources();
    const scheduler = new Scheduler(res, { sweepIntervalMs: 60_000 });
    await scheduler.start();
    // no bucket job runs while the queue is paused: only the scheduler's own wake-up fires
    await scheduler.queue.pause();
    try {
      const a = (await res.store.register("acme", spec("run-a", "job-a", 1500))).wait;
      const b = (await res.store.register("acme", spec("run-b", "job-b", 2000))).wait;
      // one pass (as any bucket job makes): it reads a's deadline, a's pass reads b's
      await scheduler.fireDue();
      for (const w of [a, b]) {
        const done = await eventually(async () => {
          const x = await res.store.getWait("acme", w.id);
          return x?.state === "timed_out" ? x : undefined;
        }, 5000);
        const lateness = Date.parse(done.resolution?.at ?? "") - Date.parse(w.deadline ?? "");
        expect(lateness).toBeGreaterThanOrEqual(0);
        expect(lateness).toBeLessThan(500);
      }
    } finally {
      await scheduler.stop();
    }
  });

  it("the sweeper schedules bucket jobs for deadlines coming up", async () => {
    const res = makeResources();
    const scheduler = new Scheduler(res, { sweepIntervalMs: 60_000, lookaheadMs: 5000 });
    const { wait } = await res.store.register("acme", spec("run-1", "job-1", 400));
    await scheduler.start(); // runs one sweep at start
    try {
      const w = await eventually(async () => {
        const x = await res.store.getWait("acme", wait.id);
        return x?.state === "timed_out" ? x : undefined;
      });
      expect(w.history.map((h) => h.what)).toEqual(["registered", "resolved"]);
    } finally {
      await scheduler.stop();
    }
  });

  it("a sweep promotes the parked deadlines within its reach into the deadline index", async () => {
    const res = makeResources();
    const k = (id: string) => res.store.keys.partition(res.store.keys.waitPartition(id) as number);
    // registered 10 minutes ahead: parked (lua/includes/parked-deadlines.lua)
    const { wait } = await res.store.register("acme", spec("run-1", "job-1", 10 * 60_000));
    const deadline = Date.parse(wait.deadline ?? "");
    expect(await res.redis.zscore(k(wait.id).deadlines, wait.id)).toBeNull();
    // the default reach (60 s) does not come near it
    const near = new Scheduler(res);
    await near.sweep();
    await near.stop();
    expect(await res.redis.zscore(k(wait.id).deadlines, wait.id)).toBeNull();
    // a lookahead of 15 minutes reaches further: the sweep promotes it, then plans its bucket job
    const scheduler = new Scheduler(res, { lookaheadMs: 15 * 60_000 });
    expect((await scheduler.sweep()).scheduled).toBe(1);
    expect(Number(await res.redis.zscore(k(wait.id).deadlines, wait.id))).toBe(deadline);
    expect(await res.redis.zcard(k(wait.id).parked)).toBe(0);
    await scheduler.stop();
  });
});

describe("retention", () => {
  it("takes no step after its time budget; the next run takes what it left", async () => {
    const res = makeResources({ retentionMs: 100, dedupWindowMs: 100 });
    const { wait } = await res.store.register("acme", spec("run-b", "job-b", 60_000));
    await res.store.cancel("acme", wait.id);
    await res.store.ingest("acme", "svc", [{ id: "eb", type: "job.done", correlationId: "nobody" }]);
    await new Promise((r) => setTimeout(r, 150));
    const partitions = res.store.keys.allPartitions();
    expect(await expireOutlived(res.store, partitions, new Pacer(1), performance.now())).toBe(0);
    expect(await res.store.getWait("acme", wait.id)).not.toBeNull();
    // the wait, the event record and the dedup record
    expect(await expireOutlived(res.store, partitions)).toBe(3);
    expect(await res.store.getWait("acme", wait.id)).toBeNull();
    expect(await res.store.getEvent("acme", "svc", "eb")).toBeNull();
  });

  it("the sweeper removes settled waits and event records once their retention has passed", async () => {
    const res = makeResources({ retentionMs: 200, dedupWindowMs: 300 });
    const scheduler = new Scheduler(res, { sweepIntervalMs: 100 });
    const { wait } = await res.store.register("acme", spec("run-1", "job-1", 60_000));
    await res.store.cancel("acme", wait.id);
    await res.store.ingest("acme", "svc", [{ id: "e1", type: "job.done", correlationId: "nobody" }]);
    expect(await res.store.getWait("acme", wait.id)).not.toBeNull();
    await scheduler.start();
    try {
      await eventually(async () => (await res.store.getWait("acme", wait.id)) === null, 5000);
      await eventually(async () => (await res.store.getEvent("acme", "svc", "e1")) === null, 5000);
    } finally {
      await scheduler.stop();
    }
  });
});
