import { describe, expect, it } from "vitest";
import { listWaits } from "../src/index.js";
import { event, ingestOne, makeStore, matchOne } from "./helpers.js";

describe("expire", () => {
  it("removes settled waits after retention, expires buffered events and forgets event keys after the window", async () => {
    const h = makeStore({ partitions: 1, retentionMs: 1000, dedupWindowMs: 5000 });
    const k = h.store.keys.partition(0);
    const { wait } = await h.store.register("acme", {
      runId: "r",
      position: "p",
      eventType: "job.done",
      correlationId: "j1",
    });
    await h.store.cancel("acme", wait.id);
    const buffered = await ingestOne(h, event("b1", "j2"));
    await matchOne(h, buffered);
    expect(await h.redis.zcard(k.inbox)).toBe(1);

    h.tick(999);
    expect((await h.store.expire(0)).handled).toBe(0);
    h.tick(2);
    const r = await h.store.expire(0);
    expect(r.handled).toBe(2);
    expect(await h.store.getWait("acme", wait.id)).toBeNull();
    expect(await h.redis.zcard(k.done)).toBe(0);
    expect(await h.redis.zcard(k.inbox)).toBe(0);
    expect((await h.store.getEvent("acme", "svc", "b1"))?.status).toBe("expired");
    // an expired buffered event no longer resolves a new wait
    const late = await h.store.register("acme", {
      runId: "r2",
      position: "p",
      eventType: "job.done",
      correlationId: "j2",
    });
    expect(late.wait.state).toBe("waiting");

    h.tick(5000);
    await h.store.expire(0);
    expect(await h.store.getEvent("acme", "svc", "b1")).toBeNull();
    expect(await h.redis.hlen(k.events)).toBe(0);
    // the event key is forgotten: the same id is new again
    const again = await ingestOne(h, event("b1", "j2"));
    expect(again.result.status).toBe("accepted");
  });

  it("forgets every record of a batch (one grouped expiry entry per script call), whatever the ids hold", async () => {
    const h = makeStore({ partitions: 1, retentionMs: 1000, dedupWindowMs: 2000 });
    const k = h.store.keys.partition(0);
    const ids = ["a:1", "5:x", "ü:ß:🙂", "", "plain"].map((s, i) => `${s}${i}`);
    const results = await h.store.ingest(
      "acme",
      "svc",
      ids.map((id, i) => event(id, `j${i}`)),
    );
    expect(results.map((r) => r.status)).toEqual(ids.map(() => "accepted"));
    expect(await h.redis.zcard(k.expiry)).toBe(2); // one "D:" and one "E:" member
    expect(await h.redis.hlen(k.events)).toBe(2 * ids.length);
    h.tick(2001);
    expect((await h.store.expire(0)).handled).toBe(2);
    expect(await h.redis.hlen(k.events)).toBe(0);
    expect(await h.redis.zcard(k.expiry)).toBe(0);
    for (const id of ids) expect(await h.store.getEvent("acme", "svc", id)).toBeNull();
  });

  it("drops the run-index entry of a wait it removes (the run index does not grow for ever)", async () => {
    const h = makeStore({ partitions: 4, retentionMs: 1000 });
    const spec = { runId: "run-gc", position: "p1", eventType: "job.done", correlationId: "j1" };
    const { wait } = await h.store.register("acme", spec);
    const keep = await h.store.register("acme", { ...spec, position: "p2", correlationId: "j2" });
    const runs = h.store.keys.partition(h.store.keys.runPartition("acme", "run-gc")).runs;
    expect(await h.redis.zcard(runs)).toBe(2);
    await h.store.cancel("acme", wait.id);
    h.tick(1001);
    await h.store.expireMany(h.store.keys.allPartitions());
    expect(await h.store.getWait("acme", wait.id)).toBeNull();
    expect(await h.redis.zcard(runs)).toBe(1); // the waiting one keeps its entry
    const page = await listWaits(h.store, "acme", { runId: "run-gc" }, { limit: 10 });
    expect(page.waits.map((w) => w.id)).toEqual([keep.wait.id]);
    // the run position is free again: another definition registers as new
    const again = await h.store.register("acme", { ...spec, correlationId: "j3" });
    expect(again.created).toBe(true);
  });

  it("reads a buffered event past retention as expired before the sweeper ran, and does not match it", async () => {
    const h = makeStore({ partitions: 1, retentionMs: 1000 });
    await matchOne(h, await ingestOne(h, event("b1", "j1")));
    h.tick(1001);
    expect((await h.store.getEvent("acme", "svc", "b1"))?.status).toBe("expired");
    const { wait } = await h.store.register("acme", {
      runId: "r",
      position: "p",
      eventType: "job.done",
      correlationId: "j1",
    });
    expect(wait.state).toBe("waiting");
  });

  it("works in bounded steps", async () => {
    const h = makeStore({ partitions: 1, retentionMs: 10 });
    for (let i = 0; i < 5; i++) {
      const { wait } = await h.store.register("acme", {
        runId: `r${i}`,
        position: "p",
        eventType: "t",
        correlationId: `c${i}`,
      });
      await h.store.cancel("acme", wait.id);
    }
    h.tick(11);
    expect(await h.store.expire(0, 2)).toEqual({ handled: 2, more: true });
    expect(await h.store.expire(0, 2)).toEqual({ handled: 2, more: true });
    expect(await h.store.expire(0, 2)).toEqual({ handled: 1, more: false });
  });
});

describe("rejections", () => {
  it("are kept per match key, capped, newest last, and forgotten after retention", async () => {
    const h = makeStore({ partitions: 2, retentionMs: 1000 });
    const many = Array.from({ length: 25 }, (_, i) => ({
      producer: "svc",
      eventType: "job.done",
      correlationId: "j1",
      eventId: `e${i}`,
      reason: "invalid_event",
      detail: "payload.amount: expected number",
    }));
    await h.store.recordRejections("acme", many);
    await h.store.recordRejections("acme", [
      { producer: "svc", eventType: "job.done", correlationId: "j2", reason: "forbidden_event_type" },
    ]);
    const kept = await h.store.rejections("acme", "job.done", "j1");
    expect(kept).toHaveLength(20);
    expect(kept[0]).toMatchObject({ eventId: "e5", reason: "invalid_event", producer: "svc" });
    expect(kept[19]?.eventId).toBe("e24");
    expect(await h.store.rejections("globex", "job.done", "j1")).toEqual([]);
    h.tick(1001);
    for (const p of h.store.keys.allPartitions()) await h.store.expire(p);
    expect(await h.store.rejections("acme", "job.done", "j1")).toEqual([]);
    expect(await h.store.rejections("acme", "job.done", "j2")).toEqual([]);
  });
});

describe("expire: never-matched events", () => {
  it("an event removed unmatched (its record past the dedup window) no longer holds back a timeout, though its stream entry is still unprocessed", async () => {
    const h = makeStore({ partitions: 1, retentionMs: 1000, dedupWindowMs: 1000 });
    const { wait } = await h.store.register("acme", {
      runId: "r",
      position: "p",
      eventType: "job.done",
      correlationId: "j1",
      timeoutMs: 60_000,
    });
    await ingestOne(h, event("e1", "j1")); // accepted on time, never matched (matchers down)
    h.tick(60_000);
    expect((await h.store.timeout(wait.id)).outcome).toBe("backlog");
    h.tick(1);
    await h.store.expire(0);
    expect(await h.redis.xlen(h.store.keys.partition(0).stream)).toBe(1);
    expect((await h.store.timeout(wait.id)).outcome).toBe("timed_out");
  });
});
