import { describe, expect, it } from "vitest";
import { parseWaitRecord } from "../src/formats/wait-record.js";
import { event, ingestOne, makeStore, matchOne } from "./helpers.js";

describe("wait records: compact while plainly waiting, JSON otherwise", () => {
  it("stores a plain waiting wait as compact text and reads every field back, whatever the ids hold", async () => {
    const h = makeStore();
    const cases = [
      { runId: "run-1", position: "step-3#1", correlationId: "ord_1", timeoutMs: 60_000 },
      { runId: "r:ü:2", position: "p,1,2", correlationId: "c:3:🙂", since: "2026-11-29T13:34:41.123Z" },
      { runId: "9:x", position: "{", correlationId: "}" },
    ];
    for (const c of cases) {
      const { wait } = await h.store.register("acme", { eventType: "job.done", ...c });
      const p = h.store.keys.waitPartition(wait.id) as number;
      const raw = String(await h.redis.hget(h.store.keys.partition(p).waits, wait.id));
      expect(raw.startsWith("{")).toBe(false);
      expect(await h.store.getWait("acme", wait.id)).toEqual(wait);
      expect(wait).toMatchObject({ runId: c.runId, position: c.position, correlationId: c.correlationId });
      expect(wait.deadline === null).toBe(c.timeoutMs === undefined);
      expect(wait.since).toBe(c.since ?? null);
      const parsed = parseWaitRecord(raw);
      expect(parsed).toMatchObject({ s: "w", r: c.runId, p: c.position });
    }
  });

  it("turns to JSON once the wait carries more (a job id) or settles, and stays readable", async () => {
    const h = makeStore();
    const { wait } = await h.store.register("acme", {
      runId: "run-1",
      position: "p",
      eventType: "job.done",
      correlationId: "j1",
      timeoutMs: 60_000,
    });
    const k = h.store.keys.partition(h.store.keys.waitPartition(wait.id) as number);
    await h.store.attachJob("acme", wait.id, "job-42");
    expect(String(await h.redis.hget(k.waits, wait.id)).startsWith("{")).toBe(true);
    expect((await h.store.getWait("acme", wait.id))?.externalJobId).toBe("job-42");
    const cancelled = await h.store.cancel("acme", wait.id);
    expect(cancelled.state).toBe("cancelled");
    expect(cancelled.createdAt).toBe(wait.createdAt);
    expect(cancelled.deadline).toBe(wait.deadline);
  });
});

describe("wait indexes: short digests, checked against each wait's own match key", () => {
  it("an event never resolves a wait whose match key only shares its index key", async () => {
    const h = makeStore();
    const seen = new Map<string, string>();
    let pair: [string, string] | undefined;
    for (let i = 0; !pair; i++) {
      const corr = `job-${i}`;
      const ik = h.store.keys.indexKey("acme", "job.done", corr);
      const other = seen.get(ik);
      if (other) pair = [other, corr];
      else seen.set(ik, corr);
    }
    const [a, b] = pair;
    expect(h.store.keys.indexKey("acme", "job.done", a)).toBe(h.store.keys.indexKey("acme", "job.done", b));
    // same index key; the partitions may differ, then nothing could mix anyway: force one partition
    const one = makeStore({ partitions: 1 });
    const { wait } = await one.store.register("acme", {
      runId: "r",
      position: "p",
      eventType: "job.done",
      correlationId: a,
    });
    const other = await ingestOne(one, event("e-b", b));
    const r = await matchOne(one, other);
    expect(r).toMatchObject({ status: "buffered", matched: [] });
    expect((await one.store.getWait("acme", wait.id))?.state).toBe("waiting");
    expect((await one.store.deliver("acme", { eventType: "job.done", correlationId: b })).delivered).toEqual([]);
    const right = await ingestOne(one, event("e-a", a));
    expect(await matchOne(one, right)).toMatchObject({ status: "matched", matched: [wait.id] });
  });
});
