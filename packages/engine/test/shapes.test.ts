/**
 * Wait shapes (docs/api.md, Wait shapes): any-of several event types, count N, failure
 * types; on a real Redis (and on the cluster project).
 */
import { isRendezvousError } from "@rendezvous/protocol";
import { describe, expect, it } from "vitest";
import { ensurePartitionCount, explainWait, listWaits, PartitionReader, Store } from "../src/index.js";
import { event, type Harness, ingestOne, makeStore, matchOne } from "./helpers.js";

const SETTLED = "payment.settled";
const FAILED = "payment.failed";

const anyOf = (runId: string, correlationId: string, extra: Record<string, unknown> = {}) => ({
  runId,
  position: "charge",
  eventTypes: [SETTLED, FAILED],
  failureTypes: [FAILED],
  correlationId,
  ...extra,
});

const countOf = (n: number, runId: string, correlationId: string, extra: Record<string, unknown> = {}) => ({
  runId,
  position: "approvals",
  eventType: "approval.given",
  count: n,
  correlationId,
  ...extra,
});

const approval = (id: string, corr: string, producer = "svc") => ({
  e: event(id, corr, { type: "approval.given" }),
  producer,
});

async function publishAndMatch(h: Harness, e: ReturnType<typeof event>, producer = "svc") {
  const ingested = await ingestOne(h, e, "acme", producer);
  return { ingested, match: await matchOne(h, ingested) };
}

describe("any-of", () => {
  it("both outcomes racing: exactly one wins, the other is a late event, the outcome follows the winner", async () => {
    const h = makeStore();
    const winners = new Set<string>();
    for (let i = 0; i < 12; i++) {
      const corr = `charge-${i}`;
      const { wait } = await h.store.register("acme", anyOf(`run-${i}`, corr, { timeoutMs: 60_000 }));
      expect(wait.eventTypes).toEqual([SETTLED, FAILED]);
      const a = await ingestOne(h, event(`s-${i}`, corr, { type: SETTLED }));
      const b = await ingestOne(h, event(`f-${i}`, corr, { type: FAILED }));
      expect(a.partition).toBe(b.partition); // one partition for every type of a correlation id
      // the two matches race (in either order)
      const order = i % 2 === 0 ? [a, b] : [b, a];
      const results = await Promise.all(order.map((x) => matchOne(h, x)));
      const matched = results.filter((r) => r.status === "matched");
      expect(matched).toHaveLength(1);
      const loser = results.find((r) => r.status !== "matched");
      expect(loser?.late).toEqual([wait.id]);
      const after = await h.store.getWait("acme", wait.id);
      expect(after?.state).toBe("resolved");
      const won = after?.resolution?.event?.id as string;
      winners.add(won.slice(0, 1));
      expect(after?.resolution?.eventType).toBe(won.startsWith("s") ? SETTLED : FAILED);
      expect(after?.resolution?.outcome).toBe(won.startsWith("s") ? "success" : "failure");
      expect(after?.lateEvents.map((e) => e.id)).toEqual([won.startsWith("s") ? `f-${i}` : `s-${i}`]);
    }
    // the race went both ways across the runs (the order alternates)
    expect(winners).toEqual(new Set(["s", "f"]));
  });

  it("events of both types buffered before the wait: the earliest accepted wins, respecting since", async () => {
    const h = makeStore();
    const s = await publishAndMatch(h, event("s1", "c-1", { type: SETTLED }));
    expect(s.match.status).toBe("buffered");
    h.tick(10);
    const f = await publishAndMatch(h, event("f1", "c-1", { type: FAILED }));
    expect(f.match.status).toBe("buffered");
    const first = await h.store.register("acme", anyOf("run-1", "c-1"));
    expect(first.wait.state).toBe("resolved");
    expect(first.wait.resolution).toMatchObject({ kind: "event", eventType: SETTLED, outcome: "success" });
    expect(first.wait.resolution?.event?.id).toBe("s1");
    expect((await h.store.getEvent("acme", "svc", "s1"))?.status).toBe("matched");
    expect((await h.store.getEvent("acme", "svc", "f1"))?.status).toBe("buffered");
    // since after s1: the failure, accepted 10 ms later, resolves the retry
    const retry = await h.store.register("acme", {
      ...anyOf("run-2", "c-1"),
      since: new Date(Date.parse(s.ingested.result.event.acceptedAt) + 1).toISOString(),
    });
    expect(retry.wait.resolution).toMatchObject({ eventType: FAILED, outcome: "failure" });
    expect(retry.wait.resolution?.event?.id).toBe("f1");
  });

  it("an event of another correlation id, or of a type it does not wait for, does not resolve it", async () => {
    const h = makeStore();
    const { wait } = await h.store.register("acme", anyOf("run-1", "c-1"));
    expect((await publishAndMatch(h, event("x1", "c-2", { type: SETTLED }))).match.status).toBe("buffered");
    expect((await publishAndMatch(h, event("x2", "c-1", { type: "payment.other" }))).match.status).toBe("buffered");
    expect((await h.store.getWait("acme", wait.id))?.state).toBe("waiting");
    expect((await publishAndMatch(h, event("x3", "c-1", { type: FAILED }))).match.matched).toEqual([wait.id]);
  });

  it("an unprocessed on-time event of its second type holds the timeout back", async () => {
    const h = makeStore();
    const { wait } = await h.store.register("acme", anyOf("run-1", "c-1", { timeoutMs: 1000 }));
    const deadline = Date.parse(wait.deadline as string);
    h.clock.now = deadline;
    const f = await ingestOne(h, event("f1", "c-1", { type: FAILED }));
    h.tick(100);
    expect(await h.store.timeout(wait.id)).toEqual({ outcome: "backlog", deadline });
    await matchOne(h, f);
    expect((await h.store.getWait("acme", wait.id))?.resolution?.outcome).toBe("failure");
  });

  it("direct delivery finds an any-of wait under any of its types; a cancelled one gets later events of each as late", async () => {
    const h = makeStore();
    const a = (await h.store.register("acme", anyOf("run-1", "c-1"))).wait;
    const delivered = await h.store.deliver("acme", { eventType: FAILED, correlationId: "c-1", payload: { x: 1 } });
    expect(delivered.delivered).toEqual([a.id]);
    expect((await h.store.getWait("acme", a.id))?.resolution?.kind).toBe("deliver");
    const b = (await h.store.register("acme", anyOf("run-2", "c-2"))).wait;
    await h.store.cancel("acme", b.id);
    for (const [id, type] of [
      ["l1", SETTLED],
      ["l2", FAILED],
    ] as const) {
      expect((await publishAndMatch(h, event(id, "c-2", { type }))).match.late).toEqual([b.id]);
    }
    expect((await h.store.getWait("acme", b.id))?.lateEvents.map((e) => e.id)).toEqual(["l1", "l2"]);
  });

  it("the definition: the set of types (any order), count and failure types; one type as eventTypes is a plain wait", async () => {
    const h = makeStore();
    const a = await h.store.register("acme", anyOf("run-1", "c-1"));
    const b = await h.store.register("acme", { ...anyOf("run-1", "c-1"), eventTypes: [FAILED, SETTLED] });
    expect(b.created).toBe(false);
    expect(b.wait.id).toBe(a.wait.id);
    for (const other of [
      { ...anyOf("run-1", "c-1"), failureTypes: [SETTLED] },
      { ...anyOf("run-1", "c-1"), count: 2 },
      { ...anyOf("run-1", "c-1"), eventTypes: [SETTLED, FAILED, "payment.held"] },
    ]) {
      await expect(h.store.register("acme", other)).rejects.toSatisfy((e) => isRendezvousError(e, "wait_conflict"));
    }
    const plain = await h.store.register("acme", {
      runId: "run-2",
      position: "p",
      eventType: SETTLED,
      correlationId: "c",
    });
    const same = await h.store.register("acme", {
      runId: "run-2",
      position: "p",
      eventTypes: [SETTLED],
      count: 1,
      correlationId: "c",
    });
    expect(same.created).toBe(false);
    expect(same.wait.id).toBe(plain.wait.id);
    expect(plain.wait.eventTypes).toBeUndefined();
  });
});

describe("counts of any-of waits", () => {
  it("an any-of wait counts once in the quota count, the recount, the per-tenant and the total counts", async () => {
    const h = makeStore({ retentionMs: 1000, quotas: { waitingWaits: 20 } });
    const q = h.store.quotas;
    const reader = new PartitionReader(h.store);
    const types = ["a.done", "b.done", "c.done"];
    const waits = [];
    for (let i = 0; i < 10; i++) {
      expect(await q.check({ tenant: "acme", count: "waitingWaits" })).toBeNull();
      const spec = { runId: `run-${i}`, position: "p", eventTypes: types, correlationId: `c-${i}`, timeoutMs: 60_000 };
      waits.push((await h.store.register("acme", spec)).wait);
    }
    await h.store.register("other", { runId: "r", position: "p", eventTypes: types, correlationId: "c-0" });
    const counts = async () => ({
      usage: (await q.usage("acme")).waitingWaits,
      counted: (await q.count(["acme"])).get("acme")?.waitingWaits,
      tenants: await reader.countWaits(["acme", "other"]),
      totals: await reader.waitTotals(),
    });
    expect(await counts()).toEqual({
      usage: 10,
      counted: 10,
      tenants: [
        { tenant: "acme", waiting: 10, settled: 0 },
        { tenant: "other", waiting: 1, settled: 0 },
      ],
      totals: { waiting: 11, settled: 0 },
    });
    // the recount agrees: 10 waiting waits, not 30, so the quota of 20 still admits one
    expect((await q.recount(["acme"])).get("acme")?.waitingWaits).toBe(10);
    expect(await q.check({ tenant: "acme", count: "waitingWaits" })).toBeNull();
    // resolved by an event of its second type, cancelled, timed out: each one settled wait
    await matchOne(h, await ingestOne(h, event("e1", "c-0", { type: "b.done" })));
    await h.store.cancel("acme", waits[1]?.id as string);
    h.tick(60_001);
    expect((await h.store.timeout(waits[2]?.id as string)).outcome).toBe("timed_out");
    expect(await counts()).toMatchObject({
      usage: 7,
      counted: 7,
      tenants: [{ tenant: "acme", waiting: 7, settled: 3 }, { waiting: 1 }],
      totals: { waiting: 8, settled: 3 },
    });
    // one delivered directly (a new one: the others are past their deadline), and one resolved at its registration by a buffered event of its third type
    await h.store.register("acme", { runId: "run-d", position: "p", eventTypes: types, correlationId: "c-d" });
    expect((await h.store.deliver("acme", { eventType: "c.done", correlationId: "c-d" })).delivered).toHaveLength(1);
    await matchOne(h, await ingestOne(h, event("e2", "c-new", { type: "c.done" })));
    const spec = { runId: "run-new", position: "p", eventTypes: types, correlationId: "c-new" };
    expect((await h.store.register("acme", spec)).wait.state).toBe("resolved");
    expect(await counts()).toMatchObject({
      usage: 7,
      counted: 7,
      tenants: [{ tenant: "acme", waiting: 7, settled: 5 }, { waiting: 1 }],
      totals: { waiting: 8, settled: 5 },
    });
    // removed after retention: nothing left of them in the counts, nor in the waits hashes
    h.tick(5000);
    for (const p of h.store.keys.allPartitions()) await h.store.expire(p);
    expect(await counts()).toMatchObject({
      tenants: [{ tenant: "acme", waiting: 7, settled: 0 }, { waiting: 1 }],
      totals: { waiting: 8, settled: 0 },
    });
    for (const p of h.store.keys.allPartitions()) {
      const fields = await h.redis.hkeys(h.store.keys.partition(p).waits);
      expect(fields.filter((f) => f.startsWith("#d"))).toEqual([]);
    }
  });
});

describe("count N", () => {
  it("count 3 with a duplicate among them needs a third distinct event", async () => {
    const h = makeStore();
    const { wait } = await h.store.register("acme", countOf(3, "run-1", "rel-1", { timeoutMs: 60_000 }));
    expect(wait).toMatchObject({ state: "waiting", count: 3, collected: [] });
    const one = approval("a1", "rel-1");
    expect((await publishAndMatch(h, one.e)).match.matched).toEqual([wait.id]);
    h.tick(1);
    expect((await publishAndMatch(h, approval("a2", "rel-1").e)).match.matched).toEqual([wait.id]);
    // the same event again: a duplicate at ingest, nothing appended, nothing counted
    const [dup] = await h.store.ingest("acme", "svc", [one.e]);
    expect(dup?.status).toBe("duplicate");
    const mid = await h.store.getWait("acme", wait.id);
    expect(mid?.state).toBe("waiting");
    expect(mid?.collected?.map((e) => e.id)).toEqual(["a1", "a2"]);
    expect(mid?.history.filter((x) => x.what === "collected")).toHaveLength(2);
    // the same event id from another producer is another event key: it counts
    h.tick(1);
    const third = await publishAndMatch(h, approval("a1", "rel-1").e, "other-svc");
    expect(third.match.matched).toEqual([wait.id]);
    const done = await h.store.getWait("acme", wait.id);
    expect(done?.state).toBe("resolved");
    expect(done?.resolution?.events?.map((e) => `${e.producer}/${e.id}`)).toEqual(["svc/a1", "svc/a2", "other-svc/a1"]);
    expect(done?.resolution?.events?.[0]?.payload).toEqual({ n: "a1" });
    expect(done?.resolution?.event?.id).toBe("a1");
    expect(done?.resolution?.event?.producer).toBe("other-svc");
    // later matches are late events
    const late = await publishAndMatch(h, approval("a4", "rel-1").e);
    expect(late.match.late).toEqual([wait.id]);
  });

  it("the 3rd event accepted 1 ms before the deadline but matched after it resolves", async () => {
    const h = makeStore();
    const { wait } = await h.store.register("acme", countOf(3, "run-1", "rel-1", { timeoutMs: 1000 }));
    const deadline = Date.parse(wait.deadline as string);
    await publishAndMatch(h, approval("a1", "rel-1").e);
    await publishAndMatch(h, approval("a2", "rel-1").e);
    h.clock.now = deadline - 1;
    const third = await ingestOne(h, approval("a3", "rel-1").e);
    h.clock.now = deadline + 500;
    expect(await h.store.timeout(wait.id)).toEqual({ outcome: "backlog", deadline });
    expect((await matchOne(h, third)).matched).toEqual([wait.id]);
    expect((await h.store.timeout(wait.id)).outcome).toBe("not_waiting");
    const done = await h.store.getWait("acme", wait.id);
    expect(done?.state).toBe("resolved");
    expect(done?.resolution?.events).toHaveLength(3);
  });

  it("the 3rd event accepted 1 ms after the deadline: timed out with 2 collected, the 3rd late", async () => {
    const h = makeStore();
    const { wait } = await h.store.register("acme", countOf(3, "run-1", "rel-1", { timeoutMs: 1000 }));
    const deadline = Date.parse(wait.deadline as string);
    await publishAndMatch(h, approval("a1", "rel-1").e);
    await publishAndMatch(h, approval("a2", "rel-1").e);
    h.clock.now = deadline + 1;
    const third = await ingestOne(h, approval("a3", "rel-1").e);
    expect((await matchOne(h, third)).late).toEqual([wait.id]);
    const t = await h.store.timeout(wait.id);
    expect(t.outcome).toBe("timed_out");
    if (t.outcome !== "timed_out") return;
    expect(t.wait.state).toBe("timed_out");
    expect(t.wait.collected?.map((e) => e.id)).toEqual(["a1", "a2"]);
    expect(t.wait.resolution?.events?.map((e) => e.id)).toEqual(["a1", "a2"]);
    expect(t.wait.lateEvents.map((e) => e.id)).toEqual(["a3"]);
  });

  it("buffered events count (accepted order, respecting since), and the rest arrive later", async () => {
    const h = makeStore();
    const early = await publishAndMatch(h, approval("a0", "rel-1").e);
    h.tick(5);
    await publishAndMatch(h, approval("a1", "rel-1").e);
    h.tick(5);
    await publishAndMatch(h, approval("a2", "rel-1").e);
    const since = new Date(Date.parse(early.ingested.result.event.acceptedAt) + 1).toISOString();
    const { wait } = await h.store.register("acme", countOf(3, "run-1", "rel-1", { since }));
    expect(wait.state).toBe("waiting");
    expect(wait.collected?.map((e) => e.id)).toEqual(["a1", "a2"]);
    expect((await h.store.getEvent("acme", "svc", "a1"))?.matchedWaits).toEqual([wait.id]);
    expect((await h.store.getEvent("acme", "svc", "a0"))?.status).toBe("buffered");
    h.tick(5);
    await publishAndMatch(h, approval("a3", "rel-1").e);
    const done = await h.store.getWait("acme", wait.id);
    expect(done?.resolution?.events?.map((e) => e.id)).toEqual(["a1", "a2", "a3"]);
  });

  it("N buffered events resolve it at registration", async () => {
    const h = makeStore();
    for (const id of ["a1", "a2"]) await publishAndMatch(h, approval(id, "rel-1").e);
    const { wait } = await h.store.register("acme", countOf(2, "run-1", "rel-1"));
    expect(wait.state).toBe("resolved");
    expect(wait.resolution?.events?.map((e) => e.id)).toEqual(["a1", "a2"]);
  });

  it("fan-out: one event is collected by every waiting count-wait of its match key", async () => {
    const h = makeStore();
    const w1 = (await h.store.register("acme", countOf(2, "run-1", "rel-1"))).wait;
    const w2 = (await h.store.register("acme", countOf(3, "run-2", "rel-1"))).wait;
    const r1 = await publishAndMatch(h, approval("a1", "rel-1").e);
    expect([...r1.match.matched].sort()).toEqual([w1.id, w2.id].sort());
    await publishAndMatch(h, approval("a2", "rel-1").e);
    expect((await h.store.getWait("acme", w1.id))?.state).toBe("resolved");
    expect((await h.store.getWait("acme", w2.id))?.collected).toHaveLength(2);
  });

  it("any-of with count: N events of any of the types; a failure type resolves at once", async () => {
    const h = makeStore();
    const spec = {
      runId: "run-1",
      position: "release",
      eventTypes: ["approval.given", "approval.denied"],
      failureTypes: ["approval.denied"],
      count: 3,
      correlationId: "rel-1",
    };
    const { wait } = await h.store.register("acme", spec);
    await publishAndMatch(h, approval("a1", "rel-1").e);
    const denied = await publishAndMatch(h, event("d1", "rel-1", { type: "approval.denied" }));
    expect(denied.match.matched).toEqual([wait.id]);
    const done = await h.store.getWait("acme", wait.id);
    expect(done?.resolution).toMatchObject({ outcome: "failure", eventType: "approval.denied" });
    expect(done?.resolution?.events?.map((e) => e.type)).toEqual(["approval.given", "approval.denied"]);
  });
});

describe("reads of shaped waits", () => {
  it("a listing shows an any-of wait once, and under each of its types", async () => {
    const h = makeStore();
    const { wait } = await h.store.register("acme", anyOf("run-1", "c-1"));
    await h.store.register("acme", { runId: "run-2", position: "p", eventType: SETTLED, correlationId: "c-2" });
    const all = await listWaits(h.store, "acme", {}, { limit: 50 });
    expect(all.waits.filter((w) => w.id === wait.id)).toHaveLength(1);
    expect(all.waits).toHaveLength(2);
    for (const eventType of [SETTLED, FAILED]) {
      const page = await listWaits(h.store, "acme", { eventType, correlationId: "c-1" }, { limit: 50 });
      expect(page.waits.map((w) => w.id)).toEqual([wait.id]);
    }
    expect((await listWaits(h.store, "acme", { eventType: FAILED }, { limit: 50 })).waits.map((w) => w.id)).toEqual([
      wait.id,
    ]);
  });

  it("explain says how many events arrived and which types are missing", async () => {
    const h = makeStore();
    const spec = {
      runId: "run-1",
      position: "p",
      eventTypes: ["approval.given", "approval.legal"],
      count: 3,
      correlationId: "rel-1",
    };
    const { wait } = await h.store.register("acme", spec);
    await publishAndMatch(h, approval("a1", "rel-1").e);
    await publishAndMatch(h, approval("a2", "rel-1").e);
    const now = (await h.store.getWait("acme", wait.id)) as NonNullable<Awaited<ReturnType<typeof h.store.getWait>>>;
    const x = await explainWait(h.store, now, { backlogThresholdMs: 1000 });
    // an event of its second type with another correlation id is a near miss
    await publishAndMatch(h, event("n1", "rel-2", { type: "approval.legal" }));
    const y = await explainWait(h.store, now, { backlogThresholdMs: 1000 });
    expect(y.verdict).toBe("correlation_mismatch");
    expect(y.details.nearMisses).toMatchObject([{ id: "n1", differs: "correlationId" }]);
    expect(x.details).toMatchObject({
      collected: 2,
      count: 3,
      missingTypes: ["approval.legal"],
      summary: "2 of 3 events arrived",
    });
  });

  it("an any-of record carries its index keys; one without them is settled under each type all the same", async () => {
    const h = makeStore();
    const { wait } = await h.store.register("acme", anyOf("run-1", "c-1"));
    const k = h.store.keys.partition(h.store.keys.waitPartition(wait.id) as number);
    const raw = JSON.parse((await h.redis.hget(k.waits, wait.id)) as string);
    expect(raw.ixs).toEqual([SETTLED, FAILED].map((t) => h.store.keys.indexKey("acme", t, "c-1")));
    delete raw.ixs;
    await h.redis.hset(k.waits, wait.id, JSON.stringify(raw));
    await h.store.cancel("acme", wait.id);
    expect(await h.redis.zcard(k.waiting)).toBe(0);
    expect(await h.redis.zcard(k.done)).toBe(2);
  });

  it("retention removes a settled any-of wait from the done index under each of its types", async () => {
    const h = makeStore({ retentionMs: 1000 });
    const { wait } = await h.store.register("acme", anyOf("run-1", "c-1"));
    await h.store.cancel("acme", wait.id);
    const k = h.store.keys.partition(h.store.keys.waitPartition(wait.id) as number);
    expect(await h.redis.zcard(k.done)).toBe(2);
    h.tick(1001);
    await h.store.expireMany(h.store.keys.allPartitions());
    expect(await h.store.getWait("acme", wait.id)).toBeNull();
    expect(await h.redis.zcard(k.done)).toBe(0);
    expect(await h.redis.zcard(k.waiting)).toBe(0);
  });
});

describe("placement and upgrade", () => {
  it("a new deployment records placement by correlation id", async () => {
    const h = makeStore();
    await ensurePartitionCount(h.store);
    expect(await h.redis.hget(h.store.keys.metaKey, "placement")).toBe("correlation");
    expect(h.store.keys.placement).toBe("correlation");
  });

  it("a deployment created before keeps its match-key placement: old waits resolve, re-registration names them", async () => {
    const h = makeStore();
    // the earlier version: partitions stored, no placement; waits and events placed by match key
    await h.redis.hset(h.store.keys.metaKey, "partitions", "4");
    h.store.keys.usePlacement("match-key");
    const old = [];
    for (let i = 0; i < 8; i++) {
      old.push((await h.store.register("acme", countOf(1, `run-${i}`, `job-${i}`, { eventType: "job.done" }))).wait);
    }
    const buffered = await publishAndMatch(h, event("early", "job-late"));
    expect(buffered.match.status).toBe("buffered");

    // the new version starts on the same Redis
    const upgraded = new Store({ redis: h.redis, prefix: h.prefix, config: h.store.config, clock: () => h.clock.now });
    expect(upgraded.keys.placement).toBe("correlation"); // until it reads the meta
    await ensurePartitionCount(upgraded);
    expect(upgraded.keys.placement).toBe("match-key");
    expect(upgraded.withConnection(h.redis).keys.placement).toBe("match-key");
    expect(await h.redis.hget(h.store.keys.metaKey, "placement")).toBeNull();
    const u = { ...h, store: upgraded };
    for (const [i, w] of old.entries()) {
      expect((await upgraded.getWait("acme", w.id))?.state).toBe("waiting");
      const again = await upgraded.register("acme", countOf(1, `run-${i}`, `job-${i}`, { eventType: "job.done" }));
      expect(again.created).toBe(false);
      expect(again.wait.id).toBe(w.id);
      const r = await publishAndMatch(u, event(`e-${i}`, `job-${i}`));
      expect(r.match.matched).toEqual([w.id]);
    }
    // the run index names the wait, whatever a process computes: one that places by correlation id
    const stray = new Store({ redis: h.redis, prefix: h.prefix, config: h.store.config, clock: () => h.clock.now });
    expect(stray.keys.placement).toBe("correlation");
    for (const [i, w] of old.entries()) {
      const again = await stray.register("acme", countOf(1, `run-${i}`, `job-${i}`, { eventType: "job.done" }));
      expect(again).toMatchObject({ created: false, wait: { id: w.id, state: "resolved" } });
    }
    const late = await upgraded.register("acme", countOf(1, "run-x", "job-late", { eventType: "job.done" }));
    expect(late.wait.resolution?.event?.id).toBe("early");
    // count works on the old placement; several types do not
    const counted = await upgraded.register("acme", countOf(2, "run-c", "job-c", { eventType: "job.done" }));
    expect(counted.wait.count).toBe(2);
    await expect(upgraded.register("acme", anyOf("run-a", "c-1"))).rejects.toSatisfy((e) =>
      isRendezvousError(e, "invalid_request"),
    );
  });
});
