import { isRendezvousError, type Wait } from "@rendezvous/protocol";
import { describe, expect, it } from "vitest";
import {
  createRedis,
  execBatch,
  MATCHER_GROUP,
  parseConfig,
  type RedisLike,
  Store,
  startRedisServer,
} from "../src/index.js";
import { deliverCandidatesCall } from "../src/transitions/deliverCandidates.js";
import { runScript } from "../src/transitions/run.js";
import { event, ingestOne, makeStore, matchOne, processEntries } from "./helpers.js";

const spec = (runId: string, correlationId: string, extra: Record<string, unknown> = {}) => ({
  runId,
  position: "step-1",
  eventType: "job.done",
  correlationId,
  ...extra,
});

describe("register", () => {
  it("creates a waiting wait, and the same definition again names the same wait", async () => {
    const h = makeStore();
    const first = await h.store.register("acme", spec("run-1", "job-1", { timeoutMs: 60_000 }));
    expect(first.created).toBe(true);
    expect(first.wait.state).toBe("waiting");
    expect(first.wait.deadline).toBe(new Date(h.clock.now + 60_000).toISOString());
    expect(first.wait.id).toMatch(/^[A-Za-z0-9._-]+$/);
    expect(first.wait.id).not.toMatch(/^\d+$/);
    const again = await h.store.register("acme", spec("run-1", "job-1", { timeoutMs: 60_000, metadata: { x: 1 } }));
    expect(again.created).toBe(false);
    expect(again.wait.id).toBe(first.wait.id);
    expect(again.wait.metadata).toBeNull();
  });

  it("refuses the same run position with another definition", async () => {
    const h = makeStore();
    await h.store.register("acme", spec("run-1", "job-1"));
    await expect(h.store.register("acme", spec("run-1", "job-2"))).rejects.toSatisfy((e) =>
      isRendezvousError(e, "wait_conflict"),
    );
    await expect(h.store.register("acme", spec("run-1", "job-1", { timeoutMs: 5 }))).rejects.toSatisfy((e) =>
      isRendezvousError(e, "wait_conflict"),
    );
  });

  it("keeps tenants apart: the same run id in two tenants are two waits, invisible to each other", async () => {
    const h = makeStore();
    const a = await h.store.register("acme", spec("run-1", "job-1"));
    const b = await h.store.register("globex", spec("run-1", "job-1"));
    expect(a.wait.id).not.toBe(b.wait.id);
    expect(await h.store.getWait("globex", a.wait.id)).toBeNull();
    expect((await h.store.getWait(null, a.wait.id))?.tenant).toBe("acme");
    await expect(h.store.cancel("globex", a.wait.id)).rejects.toSatisfy((e) => isRendezvousError(e, "not_found"));
    await expect(h.store.consume("globex", a.wait.id, "w")).rejects.toSatisfy((e) => isRendezvousError(e, "not_found"));
  });

  it("answers malformed and unknown wait ids alike", async () => {
    const h = makeStore();
    expect(await h.store.getWait("acme", "nonsense")).toBeNull();
    expect(await h.store.getWait("acme", "w99.AAAAAAAAAAAAAAAA")).toBeNull();
    expect(await h.store.getWait("acme", "w1.AAAAAAAAAAAAAAAA")).toBeNull();
    await expect(h.store.cancel("acme", "../etc")).rejects.toSatisfy((e) => isRendezvousError(e, "not_found"));
  });

  it("refuses a timeout beyond maxTimeoutMs", async () => {
    const h = makeStore({ maxTimeoutMs: 1000 });
    await expect(h.store.register("acme", spec("run-1", "job-1", { timeoutMs: 1001 }))).rejects.toSatisfy((e) =>
      isRendezvousError(e, "invalid_request"),
    );
  });
});

describe("match", () => {
  it("delivery before the wait: the event is buffered, and registering resolves at once", async () => {
    const h = makeStore();
    const ev = await ingestOne(h, event("e1", "job-1"));
    expect(ev.result.status).toBe("accepted");
    expect((await matchOne(h, ev)).status).toBe("buffered");
    expect((await h.store.getEvent("acme", "svc", "e1"))?.status).toBe("buffered");
    h.tick(10);
    const { created, wait } = await h.store.register("acme", spec("run-1", "job-1", { timeoutMs: 1000 }));
    expect(created).toBe(true);
    expect(wait.state).toBe("resolved");
    expect(wait.resolution).toMatchObject({
      kind: "event",
      event: { producer: "svc", id: "e1", payload: { n: "e1" } },
    });
    expect(wait.history.map((x) => x.what)).toEqual(["registered", "resolved"]);
    const after = await h.store.getEvent("acme", "svc", "e1");
    expect(after).toMatchObject({ status: "matched", matchedWaits: [wait.id] });
    // the buffered event was consumed: a second wait of the same match key keeps waiting
    const second = await h.store.register("acme", { ...spec("run-2", "job-1") });
    expect(second.wait.state).toBe("waiting");
  });

  it("`since` excludes buffered events accepted before it", async () => {
    const h = makeStore();
    const old = await ingestOne(h, event("old", "job-1"));
    await matchOne(h, old);
    h.tick(100);
    const since = new Date(h.clock.now - 50).toISOString();
    const { wait } = await h.store.register("acme", spec("run-1", "job-1", { since }));
    expect(wait.state).toBe("waiting");
    h.tick(10);
    const fresh = await ingestOne(h, event("new", "job-1"));
    expect(await matchOne(h, fresh)).toMatchObject({ status: "matched", matched: [wait.id] });
    expect((await h.store.getWait("acme", wait.id))?.resolution?.event?.id).toBe("new");
  });

  it("`since` picks a buffered event accepted at or after it", async () => {
    const h = makeStore();
    const old = await ingestOne(h, event("old", "job-1"));
    await matchOne(h, old);
    h.tick(100);
    const recent = await ingestOne(h, event("recent", "job-1"));
    await matchOne(h, recent);
    const { wait } = await h.store.register(
      "acme",
      spec("run-1", "job-1", { since: new Date(h.clock.now).toISOString() }),
    );
    expect(wait.resolution?.event?.id).toBe("recent");
  });

  it("the same stream entry matched twice resolves once and answers the same", async () => {
    const h = makeStore();
    const { wait } = await h.store.register("acme", spec("run-1", "job-1"));
    const ev = await ingestOne(h, event("e1", "job-1"));
    const first = await matchOne(h, ev);
    h.tick(5);
    const second = await matchOne(h, ev);
    expect(first).toEqual({ status: "matched", matched: [wait.id], collected: [], late: [] });
    expect(second).toEqual(first);
    const now = await h.store.getWait("acme", wait.id);
    expect(now?.history.filter((x) => x.what === "resolved")).toHaveLength(1);
    expect(await h.redis.xlen(h.store.keys.partition(ev.partition).outbox)).toBe(1);
  });

  it("two distinct events for one job: the first resolves, the second is late", async () => {
    const h = makeStore();
    const { wait } = await h.store.register("acme", spec("run-1", "job-1"));
    const a = await ingestOne(h, event("progress", "job-1"));
    h.tick(1);
    const b = await ingestOne(h, event("final", "job-1"));
    expect(await matchOne(h, a)).toMatchObject({ status: "matched", matched: [wait.id] });
    expect(await matchOne(h, b)).toMatchObject({ status: "late", late: [wait.id], matched: [] });
    const w = await h.store.getWait("acme", wait.id);
    expect(w?.resolution?.event?.id).toBe("progress");
    expect(w?.lateEvents.map((e) => e.id)).toEqual(["final"]);
    expect(w?.history.map((x) => x.what)).toEqual(["registered", "resolved", "late_event"]);
    expect(await h.store.getEvent("acme", "svc", "final")).toMatchObject({ status: "late", lateFor: [wait.id] });
  });

  it("fans out to every waiting wait of the match key, up to the cap", async () => {
    const h = makeStore({ fanoutCap: 2 });
    const w1 = await h.store.register("acme", spec("run-1", "job-1"));
    const w2 = await h.store.register("acme", spec("run-2", "job-1"));
    const w3 = await h.store.register("acme", spec("run-3", "job-1"));
    const ev = await ingestOne(h, event("e1", "job-1"));
    const r = await matchOne(h, ev);
    expect(r.status).toBe("matched");
    expect(r.matched).toHaveLength(2);
    const ids = [w1.wait.id, w2.wait.id, w3.wait.id];
    const states = await Promise.all(ids.map(async (id) => (await h.store.getWait("acme", id))?.state));
    expect(states.filter((s) => s === "resolved")).toHaveLength(2);
    expect(states.filter((s) => s === "waiting")).toHaveLength(1);
  });

  it("an event that resolves a wait is late for the waits of its match key settled before", async () => {
    const h = makeStore({ fanoutCap: 2 });
    const w1 = await h.store.register("acme", spec("run-1", "job-1"));
    expect(await matchOne(h, await ingestOne(h, event("e1", "job-1")))).toMatchObject({ matched: [w1.wait.id] });
    const w2 = await h.store.register("acme", spec("run-2", "job-1"));
    const r = await matchOne(h, await ingestOne(h, event("e2", "job-1")));
    expect(r).toMatchObject({ status: "matched", matched: [w2.wait.id], late: [w1.wait.id] });
    expect((await h.store.getWait("acme", w2.wait.id))?.lateEvents).toEqual([]);
  });

  it("does not match across tenants, types or correlation ids", async () => {
    const h = makeStore();
    const { wait } = await h.store.register("acme", spec("run-1", "job-1"));
    for (const [tenant, e] of [
      ["globex", event("x1", "job-1")],
      ["acme", event("x2", "job-2")],
      ["acme", event("x3", "job-1", { type: "job.failed" })],
    ] as const) {
      const ev = await ingestOne(h, e, tenant);
      expect((await matchOne(h, ev)).status).toBe("buffered");
    }
    expect((await h.store.getWait("acme", wait.id))?.state).toBe("waiting");
  });
});

describe("timeout (event-time rule)", () => {
  it("an event accepted 1 ms before the deadline but matched after it wins", async () => {
    const h = makeStore();
    const { wait } = await h.store.register("acme", spec("run-1", "job-1", { timeoutMs: 1000 }));
    const deadline = Date.parse(wait.deadline as string);
    h.clock.now = deadline - 1;
    const ev = await ingestOne(h, event("e1", "job-1"));
    expect(Date.parse(ev.result.event.acceptedAt)).toBe(deadline - 1);
    h.clock.now = deadline + 500;
    expect(await h.store.timeout(wait.id)).toEqual({ outcome: "backlog", deadline });
    expect(await matchOne(h, ev)).toMatchObject({ status: "matched", matched: [wait.id] });
    const t = await h.store.timeout(wait.id);
    expect(t.outcome).toBe("not_waiting");
    expect((await h.store.getWait("acme", wait.id))?.resolution?.kind).toBe("event");
  });

  it("an event accepted exactly at the deadline wins", async () => {
    const h = makeStore();
    const { wait } = await h.store.register("acme", spec("run-1", "job-1", { timeoutMs: 1000 }));
    h.clock.now = Date.parse(wait.deadline as string);
    const ev = await ingestOne(h, event("e1", "job-1"));
    h.tick(100);
    expect(await matchOne(h, ev)).toMatchObject({ status: "matched" });
  });

  it("an event accepted 1 ms after the deadline is late, even while the wait still reads waiting", async () => {
    const h = makeStore();
    const { wait } = await h.store.register("acme", spec("run-1", "job-1", { timeoutMs: 1000 }));
    const deadline = Date.parse(wait.deadline as string);
    h.clock.now = deadline + 1;
    const ev = await ingestOne(h, event("e1", "job-1"));
    expect(await matchOne(h, ev)).toMatchObject({ status: "late", late: [wait.id], matched: [] });
    expect((await h.store.getWait("acme", wait.id))?.state).toBe("waiting");
    const t = await h.store.timeout(wait.id);
    expect(t.outcome).toBe("timed_out");
    if (t.outcome === "timed_out") {
      expect(t.wait.resolution).toMatchObject({ kind: "timeout", deadline: wait.deadline });
      expect(t.wait.lateEvents.map((e) => e.id)).toEqual(["e1"]);
    }
  });

  it("is not due before the deadline, and never for a wait without one", async () => {
    const h = makeStore();
    const { wait } = await h.store.register("acme", spec("run-1", "job-1", { timeoutMs: 1000 }));
    h.tick(999);
    expect((await h.store.timeout(wait.id)).outcome).toBe("not_due");
    const open = await h.store.register("acme", spec("run-2", "job-2"));
    h.tick(10_000_000);
    expect(await h.store.timeout(open.wait.id)).toEqual({ outcome: "not_due", deadline: null });
  });

  it("unprocessed events of other match keys do not hold a timeout back", async () => {
    const h = makeStore({ partitions: 1 });
    const { wait } = await h.store.register("acme", spec("run-1", "job-1", { timeoutMs: 1000 }));
    await ingestOne(h, event("other", "job-2"));
    h.tick(2000);
    expect((await h.store.timeout(wait.id)).outcome).toBe("timed_out");
  });

  it("an unprocessed event of its match key accepted in the deadline's very millisecond holds it back (the stream id's sequence does not matter)", async () => {
    const h = makeStore({ partitions: 1 });
    const { wait } = await h.store.register("acme", spec("run-1", "job-1", { timeoutMs: 1000 }));
    const deadline = Date.parse(wait.deadline as string);
    h.clock.now = deadline;
    await ingestOne(h, event("other", "job-2")); // <deadline>-0
    const ev = await ingestOne(h, event("e1", "job-1")); // <deadline>-1
    expect(ev.streamId).toBe(`${deadline}-1`);
    h.tick(500);
    expect(await h.store.timeout(wait.id)).toEqual({ outcome: "backlog", deadline });
    await processEntries(h, 0);
    expect((await h.store.getWait("acme", wait.id))?.resolution?.kind).toBe("event");
  });

  it("an unprocessed event of its match key accepted after the deadline does not hold it back", async () => {
    const h = makeStore({ partitions: 1 });
    const { wait } = await h.store.register("acme", spec("run-1", "job-1", { timeoutMs: 1000 }));
    h.tick(1001);
    await ingestOne(h, event("late", "job-1"));
    expect((await h.store.timeout(wait.id)).outcome).toBe("timed_out");
  });

  it("times out several waits of a partition in one call, each by its own deadline and match key", async () => {
    const h = makeStore({ partitions: 1 });
    const a = await h.store.register("acme", spec("run-a", "job-a", { timeoutMs: 1000 }));
    const b = await h.store.register("acme", spec("run-b", "job-b", { timeoutMs: 3000 }));
    const open = await h.store.register("acme", spec("run-c", "job-c"));
    const early = await h.store.register("acme", spec("run-d", "job-d", { timeoutMs: 9000 }));
    h.tick(2000);
    // after a's deadline (late for it), before b's: both left unprocessed
    await ingestOne(h, event("ea", "job-a"));
    await ingestOne(h, event("eb", "job-b"));
    h.tick(3000);
    const last = a.wait.id.at(-1) === "A" ? "B" : "A";
    const unknown = `${a.wait.id.slice(0, -1)}${last}`;
    const results = await h.store.timeoutMany([a.wait.id, b.wait.id, a.wait.id, unknown, open.wait.id, early.wait.id]);
    expect(results.map((r) => r.outcome)).toEqual([
      "timed_out",
      "backlog",
      "not_waiting",
      "not_found",
      "not_due",
      "not_due",
    ]);
    expect(results[1]).toEqual({ outcome: "backlog", deadline: Date.parse(b.wait.deadline as string) });
    expect(results[2]).toMatchObject({ wait: { id: a.wait.id, state: "timed_out" } });
    expect(results[5]).toEqual({ outcome: "not_due", deadline: Date.parse(early.wait.deadline as string) });
    // one outbox entry: a's timeout (the repeated id did not settle it twice)
    const outbox = await h.redis.xrange(h.store.keys.partition(0).outbox, "-", "+");
    expect(outbox.map(([, f]) => f[1])).toEqual([a.wait.id]);
    // b's event wins once matched
    await processEntries(h, 0);
    expect((await h.store.getWait("acme", b.wait.id))?.resolution?.kind).toBe("event");
  });

  it("in one call, a wait whose own on-time range is within the cap times out though the call's latest deadline has more than 100 unprocessed events", async () => {
    const h = makeStore({ partitions: 1 });
    const d = await h.store.register("acme", spec("run-d", "job-d", { timeoutMs: 1000 }));
    const e = await h.store.register("acme", spec("run-e", "job-e", { timeoutMs: 3000 }));
    h.tick(2000);
    await h.store.ingest(
      "acme",
      "svc",
      Array.from({ length: 101 }, (_, i) => event(`other-${i}`, `job-other-${i}`)),
    );
    h.tick(5000);
    const results = await h.store.timeoutMany([e.wait.id, d.wait.id]);
    expect(results.map((r) => r.outcome)).toEqual(["backlog", "timed_out"]);
    // alone, each answers the same
    expect((await h.store.timeout(e.wait.id)).outcome).toBe("backlog");
    await processEntries(h, 0);
    expect((await h.store.timeout(e.wait.id)).outcome).toBe("timed_out");
  });

  it("answers each wait in its place when the ids of several partitions come interleaved, and splits a partition's long list into calls", async () => {
    const h = makeStore({ partitions: 4 });
    const waits: Wait[] = [];
    for (let i = 0; i < 530; i++) {
      waits.push(
        (await h.store.register("acme", spec(`run-${i}`, `job-${i}`, { timeoutMs: i % 3 === 0 ? 1000 : 9000 }))).wait,
      );
    }
    expect(new Set(waits.map((w) => h.store.keys.waitPartition(w.id))).size).toBe(4);
    h.tick(5000);
    const results = await h.store.timeoutMany(waits.map((w) => w.id));
    results.forEach((r, i) => {
      const w = waits[i] as Wait;
      if (i % 3 === 0) expect(r).toMatchObject({ outcome: "timed_out", wait: { id: w.id } });
      else expect(r).toEqual({ outcome: "not_due", deadline: Date.parse(w.deadline as string) });
    });
    // one partition's 600 due waits: more than one call takes them
    const one = makeStore({ partitions: 1 });
    const ids: string[] = [];
    for (let i = 0; i < 600; i++) {
      ids.push((await one.store.register("acme", spec(`r-${i}`, `j-${i}`, { timeoutMs: 1000 }))).wait.id);
    }
    one.tick(2000);
    const all = await one.store.timeoutMany(ids);
    expect(all.map((r) => r.outcome)).toEqual(ids.map(() => "timed_out"));
    expect(all.map((r) => (r.outcome === "timed_out" ? r.wait.id : ""))).toEqual(ids);
  });

  it("in one call over the entry cap, waits are judged by their own ranges, earliest deadline first", async () => {
    const h = makeStore({ partitions: 1 });
    const d1 = await h.store.register("acme", spec("run-1", "job-1", { timeoutMs: 1000 }));
    const d2 = await h.store.register("acme", spec("run-2", "job-2", { timeoutMs: 3000 }));
    const d3 = await h.store.register("acme", spec("run-3", "job-3", { timeoutMs: 3000 }));
    h.tick(2000);
    // 101 stream entries after d1's deadline, before d2's and d3's
    for (let i = 0; i < 101; i++) await ingestOne(h, event(`other-${i}`, `job-other-${i}`));
    h.tick(5000);
    const results = await h.store.timeoutMany([d3.wait.id, d1.wait.id, d2.wait.id]);
    expect(results.map((r) => r.outcome)).toEqual(["backlog", "timed_out", "backlog"]);
  });

  it("more than 100 events in the partition's unprocessed on-time entries hold every timeout back (the partition-wide rule) until the matchers have acknowledged them", async () => {
    const h = makeStore({ partitions: 1 });
    const { wait } = await h.store.register("acme", spec("run-1", "job-1", { timeoutMs: 1000 }));
    const ingestOthers = (from: number, n: number) =>
      h.store.ingest(
        "acme",
        "svc",
        Array.from({ length: n }, (_, i) => event(`other-${from + i}`, `job-other-${from + i}`)),
      );
    await ingestOthers(0, 60); // one stream entry of 60 events
    await ingestOthers(60, 41); // another of 41
    h.tick(2000);
    const deadline = Date.parse(wait.deadline as string);
    expect(await h.store.timeout(wait.id)).toEqual({ outcome: "backlog", deadline });
    // the first entry delivered, matched and acknowledged: 41 events left unprocessed, none of job-1
    expect(await processEntries(h, 0, { count: 1 })).toHaveLength(1);
    expect((await h.store.timeout(wait.id)).outcome).toBe("timed_out");
  });

  it("more than 100 unprocessed on-time entries (pending and undelivered together) hold every timeout back, counted before any is read", async () => {
    const h = makeStore({ partitions: 1 });
    const { wait } = await h.store.register("acme", spec("run-1", "job-1", { timeoutMs: 1000 }));
    for (let i = 0; i < 101; i++) await ingestOne(h, event(`other-${i}`, `job-other-${i}`)); // 101 entries
    await processEntries(h, 0, { count: 30, ack: false }); // 30 pending, 71 undelivered
    h.tick(2000);
    expect((await h.store.timeout(wait.id)).outcome).toBe("backlog");
    await processEntries(h, 0, { count: 1 }); // 30 pending, 70 undelivered: 100
    expect((await h.store.timeout(wait.id)).outcome).toBe("timed_out");
  });

  it("reads the consumer group: a pending or undelivered on-time event of its match key holds it back, a pending entry whose event has been matched does not", async () => {
    const h = makeStore({ partitions: 1 });
    const b = await h.store.register("acme", spec("run-b", "job-b", { timeoutMs: 1000 }));
    const c = await h.store.register("acme", spec("run-c", "job-c", { timeoutMs: 1000 }));
    const stream = h.store.keys.partition(0).stream;
    // job-b's event is delivered and left pending; job-c's is never delivered (it lies
    // after the group's last-delivered id)
    h.tick(10);
    const evB = await ingestOne(h, event("eb", "job-b"));
    const evC = await ingestOne(h, event("ec", "job-c"));
    expect(await processEntries(h, 0, { count: 1, ack: false })).toEqual([
      { id: evB.streamId, eventKeys: [evB.eventKey] },
    ]);
    h.tick(5000);
    expect((await h.store.timeout(b.wait.id)).outcome).toBe("backlog"); // pending
    expect((await h.store.timeout(c.wait.id)).outcome).toBe("backlog"); // undelivered
    // b's event is matched, its entry not yet acknowledged: its record says processed
    expect(await matchOne(h, evB)).toMatchObject({ status: "matched", matched: [b.wait.id] });
    expect(((await h.redis.xpending(stream, MATCHER_GROUP)) as unknown[]).slice(0, 2)).toEqual([1, evB.streamId]);
    expect((await h.store.timeout(b.wait.id)).outcome).toBe("not_waiting");
    expect((await h.store.timeout(c.wait.id)).outcome).toBe("backlog");
    expect((await processEntries(h, 0)).map((e) => e.id)).toEqual([evC.streamId]);
    expect((await h.store.getWait("acme", c.wait.id))?.resolution?.kind).toBe("event");
  });

  it("reads stream entries of earlier versions (field k: one event key)", async () => {
    const h = makeStore({ partitions: 1 });
    const { wait } = await h.store.register("acme", spec("run-1", "job-1", { timeoutMs: 1000 }));
    const stream = h.store.keys.partition(0).stream;
    const ev = await ingestOne(h, event("e1", "job-1"));
    // the same event as an earlier version appended it: its own entry, field k
    await h.redis.xdel(stream, ev.streamId);
    await h.redis.xadd(stream, "*", "k", ev.eventKey);
    h.tick(5000);
    expect((await h.store.timeout(wait.id)).outcome).toBe("backlog");
    await matchOne(h, ev);
    expect((await h.store.timeout(wait.id)).outcome).toBe("not_waiting");
  });

  it("a pending entry whose events are of other match keys holds nothing back, however old", async () => {
    const h = makeStore({ partitions: 1 });
    const { wait } = await h.store.register("acme", spec("run-1", "job-1", { timeoutMs: 1000 }));
    await ingestOne(h, event("x", "job-x"));
    await processEntries(h, 0, { ack: false }); // a matcher died holding it
    h.tick(5000);
    expect((await h.store.timeout(wait.id)).outcome).toBe("timed_out");
  });

  it("a timed out wait keeps later events as late and is not resurrected", async () => {
    const h = makeStore();
    const { wait } = await h.store.register("acme", spec("run-1", "job-1", { timeoutMs: 1000 }));
    h.tick(1000);
    expect((await h.store.timeout(wait.id)).outcome).toBe("timed_out");
    h.tick(1);
    const ev = await ingestOne(h, event("e1", "job-1"));
    expect(await matchOne(h, ev)).toMatchObject({ status: "late", late: [wait.id] });
    expect((await h.store.getWait("acme", wait.id))?.state).toBe("timed_out");
  });
});

describe("cancel", () => {
  it("cancels a waiting wait once", async () => {
    const h = makeStore();
    const { wait } = await h.store.register("acme", spec("run-1", "job-1", { timeoutMs: 1000 }));
    const cancelled = await h.store.cancel("acme", wait.id);
    expect(cancelled.state).toBe("cancelled");
    expect(cancelled.resolution?.kind).toBe("cancel");
    await expect(h.store.cancel("acme", wait.id)).rejects.toSatisfy((e) => isRendezvousError(e, "not_waiting"));
    h.tick(5000);
    expect((await h.store.timeout(wait.id)).outcome).toBe("not_waiting");
    const p = h.store.keys.waitPartition(wait.id) as number;
    expect(await h.redis.zscore(h.store.keys.partition(p).deadlines, wait.id)).toBeNull();
  });

  it("cancel racing an event: exactly one wins, the other is recorded", async () => {
    for (let i = 0; i < 20; i++) {
      const h = makeStore({}, false);
      const { wait } = await h.store.register("acme", spec(`run-${i}`, "job-1"));
      const ev = await ingestOne(h, event(`e${i}`, "job-1"));
      const [cancel, match] = await Promise.allSettled([h.store.cancel("acme", wait.id), matchOne(h, ev)]);
      const final = await h.store.getWait("acme", wait.id);
      if (cancel.status === "fulfilled") {
        expect(final?.state).toBe("cancelled");
        expect(match.status === "fulfilled" && match.value).toMatchObject({ status: "late", late: [wait.id] });
        expect(final?.lateEvents).toHaveLength(1);
      } else {
        expect(isRendezvousError(cancel.reason, "not_waiting")).toBe(true);
        expect(final?.state).toBe("resolved");
        expect(final?.resolution?.event?.id).toBe(`e${i}`);
      }
      expect(final?.history.filter((x) => x.what === "resolved")).toHaveLength(1);
      await h.redis.quit();
    }
  });
});

describe("consume", () => {
  it("refuses a waiting wait", async () => {
    const h = makeStore();
    const { wait } = await h.store.register("acme", spec("run-1", "job-1"));
    await expect(h.store.consume("acme", wait.id, "w1")).rejects.toSatisfy((e) => isRendezvousError(e, "not_resolved"));
  });

  it("100 concurrent consumers: exactly one is first, all see the same claimer", async () => {
    const h = makeStore({}, false);
    const { wait } = await h.store.register("acme", spec("run-1", "job-1"));
    await matchOne(h, await ingestOne(h, event("e1", "job-1")));
    const results = await Promise.all(
      Array.from({ length: 100 }, (_, i) => h.store.consume("acme", wait.id, `worker-${i}`)),
    );
    const firsts = results.filter((r) => r.first);
    expect(firsts).toHaveLength(1);
    const by = firsts[0]?.consumption.by;
    for (const r of results) expect(r.consumption.by).toBe(by);
    const final = await h.store.getWait("acme", wait.id);
    expect(final?.history.filter((x) => x.what === "consumed")).toHaveLength(1);
    expect(final?.consumption?.by).toBe(by);
  });
});

describe("script calls", () => {
  const evalCounts = async (redis: RedisLike) => {
    const text = await redis.info("commandstats");
    const calls = (name: string) => Number(new RegExp(`^cmdstat_${name}:calls=(\\d+)`, "m").exec(text)?.[1] ?? 0);
    return { eval: calls("eval"), evalsha: calls("evalsha") };
  };

  it("a connection loads a script with its first call (EVAL), then calls it by its SHA", async () => {
    const server = await startRedisServer();
    const redis = createRedis(server.url, { name: "t-scripts" });
    try {
      const store = new Store({ redis, prefix: "t", config: parseConfig({ partitions: 1 }) });
      const k = store.keys.partition(0);
      const call = () =>
        deliverCandidatesCall(k, {
          indexPrefix: "t\u0000",
          legacyIndexPrefix: "u",
          matchKeyPrefix: "x",
          idPrefix: "w",
          limit: 1,
        });
      await runScript(redis, call());
      expect(await evalCounts(redis)).toEqual({ eval: 1, evalsha: 0 });
      await runScript(redis, call());
      const replies = await execBatch(redis, [
        { key: k.waits, add: (p) => void runScript(p, call()) },
        { key: k.waits, add: (p) => void runScript(p, call()) },
      ]);
      expect(replies.map(([err]) => err)).toEqual([null, null]);
      expect(await evalCounts(redis)).toEqual({ eval: 1, evalsha: 3 });
    } finally {
      redis.disconnect();
      await server.stop();
    }
  });

  it("recovers a script the server lost (SCRIPT FLUSH): the call runs again as EVAL, alone or in a pipeline", async () => {
    const server = await startRedisServer();
    const redis = createRedis(server.url, { name: "t-noscript" });
    try {
      const store = new Store({ redis, prefix: "t", config: parseConfig({ partitions: 4 }) });
      const first = await store.register("acme", spec("run-1", "job-1"));
      await redis.script("FLUSH");
      const second = await store.register("acme", spec("run-2", "job-2"));
      expect(second.created).toBe(true);
      await redis.script("FLUSH");
      const results = await store.ingest("acme", "svc", [event("e1", "job-1"), event("e2", "job-2"), event("e3", "x")]);
      expect(results.map((r) => r.status)).toEqual(["accepted", "accepted", "accepted"]);
      await redis.script("FLUSH");
      const k = store.keys.partition(store.keys.waitPartition(first.wait.id) as number);
      const replies = await execBatch(redis, [
        {
          key: k.waits,
          add: (p) =>
            void runScript(
              p,
              deliverCandidatesCall(k, {
                indexPrefix: "t\u0000",
                legacyIndexPrefix: "u",
                matchKeyPrefix: "x",
                idPrefix: "w",
                limit: 1,
              }),
            ),
        },
        { key: k.waits, add: (p) => p.hget(k.waits, first.wait.id) },
      ]);
      expect(replies.map(([err]) => err)).toEqual([null, null]);
      expect(typeof replies[1]?.[1]).toBe("string");
      expect((await store.cancel("acme", first.wait.id)).state).toBe("cancelled");
    } finally {
      redis.disconnect();
      await server.stop();
    }
  });
});
