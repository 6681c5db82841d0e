import { describe, expect, it } from "vitest";
import { PartitionReader } from "../src/index.js";
import { countDue } from "../src/reads/deadlines.js";
import { type Harness, makeStore, T0 } from "./helpers.js";

// lua/includes/parked-deadlines.lua
const PARK_AHEAD_MS = 300_000;
const PARK_HORIZON_MS = 86_400_000;
const SLOT_MS = 60_000;
const HOUR = 3_600_000;

const spec = (runId: string, timeoutMs: number, extra: Record<string, unknown> = {}) => ({
  runId,
  position: "step",
  eventType: "job.done",
  correlationId: `c-${runId}`,
  timeoutMs,
  ...extra,
});

/** The deadline index entry, the parked slots and the slot strings of one partition. */
async function deadlineState(h: Harness, partition: number) {
  const k = h.store.keys.partition(partition);
  const slots = await h.redis.zrange(k.parked, "0", "-1");
  const strings: Record<string, string> = {};
  for (const slot of slots) strings[slot] = (await h.redis.get(`${k.parked}:${slot}`)) ?? "";
  return { indexed: await h.redis.zrange(k.deadlines, "0", "-1", "WITHSCORES"), slots, strings };
}

describe("parked deadlines", () => {
  it("a deadline 5 minutes or more ahead is parked in its slot; a nearer one enters the deadline index", async () => {
    const h = makeStore({ partitions: 1 });
    const near = await h.store.register("acme", spec("near", PARK_AHEAD_MS - 1));
    const far = await h.store.register("acme", spec("far", HOUR));
    const edge = await h.store.register("acme", spec("edge", PARK_AHEAD_MS));
    const s = await deadlineState(h, 0);
    expect(s.indexed).toEqual([near.wait.id, String(T0 + PARK_AHEAD_MS - 1)]);
    const farSlot = String(T0 + HOUR - ((T0 + HOUR) % SLOT_MS));
    const edgeSlot = String(T0 + PARK_AHEAD_MS - ((T0 + PARK_AHEAD_MS) % SLOT_MS));
    expect(s.slots).toEqual([edgeSlot, farSlot]);
    expect(s.strings[farSlot]).toBe(far.wait.id.slice(-16));
    expect(s.strings[edgeSlot]).toBe(edge.wait.id.slice(-16));
    // beyond the horizon: indexed (a settled wait's parked entry stays until its slot is promoted)
    const beyond = await h.store.register("acme", spec("beyond", PARK_HORIZON_MS + 1));
    const last = await h.store.register("acme", spec("last", PARK_HORIZON_MS));
    expect(await h.redis.zscore(h.store.keys.partition(0).deadlines, beyond.wait.id)).toBe(
      String(T0 + PARK_HORIZON_MS + 1),
    );
    expect(await h.redis.zscore(h.store.keys.partition(0).deadlines, last.wait.id)).toBeNull();
    // a re-registration (same definition) parks nothing more
    expect((await h.store.register("acme", spec("far", HOUR))).created).toBe(false);
    expect((await deadlineState(h, 0)).strings[farSlot]).toBe(far.wait.id.slice(-16));
  });

  it("the promotion moves a slot within reach into the deadline index and drops the entries of settled waits", async () => {
    const h = makeStore({ partitions: 1 });
    const kept = await h.store.register("acme", spec("kept", HOUR));
    const cancelled = await h.store.register("acme", spec("cancelled", HOUR + 1));
    const later = await h.store.register("acme", spec("later", HOUR + SLOT_MS));
    await h.store.cancel("acme", cancelled.wait.id);
    const slot = T0 + HOUR;

    // not yet within reach
    h.tick(HOUR - 2 * SLOT_MS);
    expect(await h.store.promoteMany([0], SLOT_MS)).toEqual({ promoted: 0, dropped: 0, more: false });
    expect((await deadlineState(h, 0)).indexed).toEqual([]);

    h.tick(SLOT_MS);
    expect(await h.store.promoteMany([0], SLOT_MS)).toEqual({ promoted: 1, dropped: 1, more: false });
    const s = await deadlineState(h, 0);
    expect(s.indexed).toEqual([kept.wait.id, String(slot)]);
    expect(s.slots).toEqual([String(slot + SLOT_MS)]);
    expect(s.strings[String(slot + SLOT_MS)]).toBe(later.wait.id.slice(-16));

    // the scheduler's read finds it at its deadline, and the timeout settles it there
    h.tick(SLOT_MS);
    expect(await new PartitionReader(h.store).dueWaits(0, h.clock.now, 10)).toEqual([kept.wait.id]);
    expect((await h.store.timeout(kept.wait.id)).outcome).toBe("timed_out");
    expect((await deadlineState(h, 0)).indexed).toEqual([]);
  });

  it("a deadline moved by a heartbeat is indexed by the heartbeat; its parked entry is dropped", async () => {
    const h = makeStore({ partitions: 1 });
    const { wait } = await h.store.register("acme", spec("beat", HOUR, { heartbeatMs: 2 * HOUR }));
    h.tick(1000);
    const beat = await h.store.heartbeat("acme", wait.id);
    const moved = Date.parse(beat.deadline ?? "");
    expect(moved).toBe(T0 + 1000 + 2 * HOUR);
    expect((await deadlineState(h, 0)).indexed).toEqual([wait.id, String(moved)]);
    h.tick(HOUR - 30_000);
    expect(await h.store.promoteMany([0], SLOT_MS)).toEqual({ promoted: 0, dropped: 1, more: false });
    const s = await deadlineState(h, 0);
    expect(s.indexed).toEqual([wait.id, String(moved)]);
    expect(s.slots).toEqual([]);
  });

  it("a slot larger than a call's budget is promoted over several calls, each wait once", async () => {
    const h = makeStore({ partitions: 1 });
    const ids: string[] = [];
    for (let i = 0; i < 7; i++) ids.push((await h.store.register("acme", spec(`r${i}`, HOUR + i))).wait.id);
    const k = h.store.keys.partition(0);
    const { promoteDeadlinesCall, promoteDeadlinesResult } = await import("../src/transitions/promoteDeadlines.js");
    const { runScript } = await import("../src/transitions/run.js");
    const call = () =>
      runScript(h.redis, promoteDeadlinesCall(k, { reachMs: HOUR + SLOT_MS, maxWaits: 3, now: h.clock.now })).then(
        (r) => promoteDeadlinesResult(r as never),
      );
    expect(await call()).toEqual({ promoted: 3, dropped: 0, more: true });
    expect(await h.redis.strlen(`${k.parked}:${T0 + HOUR}`)).toBe(4 * 16);
    expect(await call()).toEqual({ promoted: 3, dropped: 0, more: true });
    expect(await call()).toEqual({ promoted: 1, dropped: 0, more: false });
    expect(await call()).toEqual({ promoted: 0, dropped: 0, more: false });
    const indexed = await h.redis.zrange(k.deadlines, "0", "-1", "WITHSCORES");
    const expected = ids.flatMap((id, i) => [id, String(T0 + HOUR + i)]);
    expect(indexed).toEqual(expected);
    expect(await h.redis.exists(`${k.parked}:${T0 + HOUR}`, k.parked)).toBe(0);
  });

  it("a wait parked past its deadline (no sweep ran) counts as overdue, is promoted as overdue and times out", async () => {
    const h = makeStore({ partitions: 2 });
    const { wait } = await h.store.register("acme", spec("late", 10 * 60_000));
    await h.store.register("acme", spec("near", 1000));
    const p = h.store.keys.waitPartition(wait.id) as number;
    // the console's count: the slot has not started, the near one is not due
    expect(await countDue(h.store, h.clock.now)).toBe(0);
    h.tick(20 * 60_000);
    expect(await countDue(h.store, h.clock.now)).toBe(2);
    expect(await new PartitionReader(h.store).dueWaits(p, h.clock.now, 10)).not.toContain(wait.id);
    expect((await h.store.promoteMany([0, 1], SLOT_MS)).promoted).toBe(1);
    expect(await countDue(h.store, h.clock.now)).toBe(2);
    expect(await new PartitionReader(h.store).dueWaits(p, h.clock.now, 10)).toContain(wait.id);
    expect((await h.store.timeout(wait.id)).outcome).toBe("timed_out");
  });
});
