/** Quotas in Redis (src/quotas.ts, lua/takeQuota-1.lua): counts beside the transitions, limiters across connections. */
import { redisUrl, trackOpen, uniquePrefix } from "@rendezvous/testkit";
import { describe, expect, it } from "vitest";
import { createRedis, parseConfig, Store } from "../src/index.js";
import { event, ingestOne, makeStore, matchOne } from "./helpers.js";

const spec = (runId: string, correlationId = `job-${runId}`) => ({
  runId,
  position: "p",
  eventType: "job.done",
  correlationId,
});

describe("the limits in force", () => {
  it("a tenant's registry limits, else the file's tenant quotas, else the defaults; read at each call", () => {
    const h = makeStore({
      quotas: { waitingWaits: 10, hostRequestsPerSec: 100 },
      tenants: { filed: { quotas: { waitingWaits: 5, hostRequestsPerSec: null } } },
    });
    const q = h.store.quotas;
    const registry = new Map<string, Record<string, number>>();
    // before the registry is followed: the file alone, as without a registry
    expect(q.limits("filed")).toEqual({
      waitingWaits: 5,
      bufferedEvents: null,
      hostRequestsPerSec: null,
      producerEventsPerSec: null,
    });
    q.follow((t) => registry.get(t));
    expect(q.limits("fresh")).toMatchObject({ waitingWaits: 10, hostRequestsPerSec: 100 });
    registry.set("fresh", { waitingWaits: 2, producerEventsPerSec: 7.5 });
    expect(q.limits("fresh")).toEqual({
      waitingWaits: 2,
      bufferedEvents: null,
      hostRequestsPerSec: 100,
      producerEventsPerSec: 7.5,
    });
    // a registry value wins over the file's tenant quota, which wins over the default
    registry.set("filed", { hostRequestsPerSec: 3 });
    expect(q.limits("filed")).toMatchObject({ waitingWaits: 5, hostRequestsPerSec: 3 });
    // values a quota cannot use (stored before the names were checked) fall through
    registry.set("fresh", { waitingWaits: 1.5, hostRequestsPerSec: 0, typo: 1 });
    expect(q.limits("fresh")).toMatchObject({ waitingWaits: 10, hostRequestsPerSec: 100 });
    expect(q.counted(["fresh", "filed", "none"])).toEqual(["fresh", "filed", "none"]);
  });
});

describe("count quotas", () => {
  it("waitingWaits: the count follows registrations and resolutions of every kind; another tenant is apart", async () => {
    const h = makeStore({ quotas: { waitingWaits: 3 }, tenants: { big: { quotas: { waitingWaits: null } } } });
    const q = h.store.quotas;
    const check = (tenant: string) => q.check({ tenant, count: "waitingWaits" });
    const w = [];
    for (let i = 0; i < 3; i++) {
      expect(await check("acme")).toBeNull();
      w.push((await h.store.register("acme", spec(`r${i}`))).wait);
    }
    expect(await check("acme")).toEqual({
      kind: "count",
      quota: "waitingWaits",
      limit: 3,
      usage: 3,
      retryAfterSec: 1,
    });
    // the same registration again changes nothing
    await h.store.register("acme", spec("r0"));
    expect((await q.usage("acme")).waitingWaits).toBe(3);
    // another tenant with the default, and one without a limit
    expect(await check("other")).toBeNull();
    expect(await check("big")).toBeNull();
    expect(q.limits("big").waitingWaits).toBeNull();
    // cancel, deliver, match each take one off
    await h.store.cancel("acme", w[0]?.id as string);
    expect((await q.usage("acme")).waitingWaits).toBe(2);
    await h.store.deliver("acme", { eventType: "job.done", correlationId: "job-r1" });
    expect((await q.usage("acme")).waitingWaits).toBe(1);
    await matchOne(h, await ingestOne(h, event("e1", "job-r2")));
    expect((await q.usage("acme")).waitingWaits).toBe(0);
    // a timeout too
    await h.store.register("acme", { ...spec("r9"), timeoutMs: 10 });
    expect((await q.usage("acme")).waitingWaits).toBe(1);
    h.tick(1000);
    const waitId = (await h.store.register("acme", { ...spec("r9"), timeoutMs: 10 })).wait.id;
    expect((await h.store.timeout(waitId)).outcome).toBe("timed_out");
    expect((await q.usage("acme")).waitingWaits).toBe(0);
  });

  it("waitingWaits: a count-N wait leaves the count once, when its Nth event resolves it, not per collected event", async () => {
    const h = makeStore({ quotas: { waitingWaits: 10 } });
    const q = h.store.quotas;
    const count3 = { ...spec("r1", "rel-1"), count: 3 };
    const wait = (await h.store.register("acme", count3)).wait;
    await h.store.register("acme", spec("r2", "rel-2"));
    expect((await q.usage("acme")).waitingWaits).toBe(2);
    for (const id of ["a1", "a2"]) {
      const r = await matchOne(h, await ingestOne(h, event(id, "rel-1")));
      // taken by the wait, which only collected it: still waiting
      expect(r).toMatchObject({ status: "matched", matched: [wait.id], collected: [wait.id] });
      expect((await q.usage("acme")).waitingWaits).toBe(2);
      h.tick(1);
    }
    const third = await matchOne(h, await ingestOne(h, event("a3", "rel-1")));
    expect(third).toMatchObject({ matched: [wait.id], collected: [] });
    expect((await h.store.getWait("acme", wait.id))?.state).toBe("resolved");
    expect((await q.usage("acme")).waitingWaits).toBe(1);
    // the counter agrees with the indexes
    expect((await q.count(["acme"])).get("acme")?.waitingWaits).toBe(1);
  });

  it("bufferedEvents: counted after the match; a registration that takes one and the expiry lower it", async () => {
    const h = makeStore({ retentionMs: 1000, quotas: { bufferedEvents: 2 } });
    const q = h.store.quotas;
    const a = await ingestOne(h, event("e1", "job-1"));
    const b = await ingestOne(h, event("e2", "job-2"));
    // not matched yet: not counted (the lag of the matchers' backlog)
    expect(await q.check({ tenant: "acme", count: "bufferedEvents" })).toBeNull();
    await matchOne(h, a);
    await matchOne(h, b);
    expect(await q.check({ tenant: "acme", count: "bufferedEvents" })).toMatchObject({ usage: 2, limit: 2 });
    expect((await h.store.register("acme", spec("r1", "job-1"))).wait.state).toBe("resolved");
    expect((await q.usage("acme")).bufferedEvents).toBe(1);
    h.tick(5000);
    await h.store.expire(h.store.keys.matchPartition("acme", "job.done", "job-2"));
    for (const p of h.store.keys.allPartitions()) await h.store.expire(p);
    expect((await q.usage("acme")).bufferedEvents).toBe(0);
  });

  it("the recount sets a count that drifted back to what the indexes hold", async () => {
    const h = makeStore({ quotas: { waitingWaits: 10, bufferedEvents: 10 } });
    const q = h.store.quotas;
    await h.store.register("acme", spec("r1"));
    await h.store.register("acme", spec("r2"));
    await matchOne(h, await ingestOne(h, event("e1", "nobody")));
    await h.redis.hset(h.store.keys.tenantQuota("acme").counts, "w", 7, "b", -3);
    expect(await q.recount(["acme", "quiet"])).toEqual(
      new Map([
        ["acme", { waitingWaits: 2, bufferedEvents: 1 }],
        ["quiet", { waitingWaits: 0, bufferedEvents: 0 }],
      ]),
    );
    expect(await q.usage("acme")).toEqual({ waitingWaits: 2, bufferedEvents: 1 });
    expect(q.counted(["acme"])).toEqual(["acme"]);
  });

  it("a Store on another connection keeps the counts of the limits in force: the registry's and the file's", async () => {
    const h = makeStore({ tenants: { filed: { quotas: { waitingWaits: 5 } } } });
    const other = h.store.withConnection(trackOpen(createRedis(redisUrl(), { name: "q-other" })));
    // the registry is followed after the other Store was made, and the registry view
    // replaces config.tenants (without their quotas), as at the start of a process
    const registry = new Map<string, Record<string, number>>([["reg", { waitingWaits: 4 }]]);
    h.store.quotas.follow((t) => registry.get(t));
    (h.store.config as { tenants: unknown }).tenants = { filed: {}, reg: {} };
    expect(other.quotas.limits("reg").waitingWaits).toBe(4);
    expect(other.quotas.limits("filed").waitingWaits).toBe(5);
    for (const tenant of ["filed", "reg"]) {
      const w = (await h.store.register(tenant, { ...spec("r1"), timeoutMs: 10 })).wait;
      expect((await h.store.quotas.usage(tenant)).waitingWaits).toBe(1);
      h.tick(1000);
      // the scheduler times out on a connection of its own
      expect((await other.timeout(w.id)).outcome).toBe("timed_out");
      expect((await h.store.quotas.usage(tenant)).waitingWaits).toBe(0);
      expect(await h.redis.hget(h.store.keys.tenantQuota(tenant).counts, "w")).toBe("0");
    }
    other.redis.disconnect();
  });

  it("a count quota set anew is checked against the count recounted then, not a stale one; a removed one's counter goes", async () => {
    const h = makeStore();
    const q = h.store.quotas;
    const key = h.store.keys.tenantQuota("acme").counts;
    const registry = new Map<string, Record<string, number>>([["acme", { waitingWaits: 2 }]]);
    q.follow((t) => registry.get(t));
    const w = [];
    for (let i = 0; i < 2; i++) w.push((await h.store.register("acme", spec(`r${i}`))).wait);
    expect(await q.check({ tenant: "acme", count: "waitingWaits" })).toMatchObject({ usage: 2, limit: 2 });
    // the quota removed: its counter is removed, and no longer kept while the waits settle
    registry.set("acme", {});
    expect(await q.check({ tenant: "acme", count: "waitingWaits" })).toBeNull();
    expect(await h.redis.hexists(key, "w")).toBe(0);
    for (const x of w) await h.store.cancel("acme", x.id);
    await h.store.register("acme", spec("r9"));
    // set again: the check sees 1 waiting wait, not a count left from before
    registry.set("acme", { waitingWaits: 2 });
    expect(await q.check({ tenant: "acme", count: "waitingWaits" })).toBeNull();
    expect(await h.redis.hget(key, "w")).toBe("1");
    expect((await q.usage("acme")).waitingWaits).toBe(1);
    // a process that sees the tenant first, without its counter (never kept): recounted before the check
    await h.redis.hdel(key, "w");
    const fresh = new Store({ redis: h.redis, prefix: h.prefix, config: h.store.config });
    fresh.quotas.follow((t) => (t === "acme" ? { waitingWaits: 1 } : undefined));
    expect(await fresh.quotas.check({ tenant: "acme", count: "waitingWaits" })).toMatchObject({ usage: 1, limit: 1 });
  });

  it("free: true only where check would answer null at once (no limit, no counts to set right first)", async () => {
    const h = makeStore();
    const q = h.store.quotas;
    const key = h.store.keys.tenantQuota("acme").counts;
    const registry = new Map<string, Record<string, number>>();
    q.follow((t) => registry.get(t));
    const req = { tenant: "acme", count: "bufferedEvents", rate: "producerEventsPerSec" } as const;
    // a tenant this process has not looked at yet: its kept counts are to be seen first
    expect(q.free(req)).toBe(false);
    expect(q.free({ tenant: "acme", rate: "producerEventsPerSec" })).toBe(true);
    expect(await q.check(req)).toBeNull();
    expect(q.free(req)).toBe(true);
    // a producer's own rate, a tenant rate or a count quota: the check runs
    expect(q.free({ ...req, producer: { id: "svc", perSec: 5 } })).toBe(false);
    expect(q.free({ ...req, producer: { id: "svc", perSec: undefined } })).toBe(true);
    registry.set("acme", { producerEventsPerSec: 10 });
    expect(q.free(req)).toBe(false);
    registry.set("acme", { bufferedEvents: 10 });
    expect(q.free(req)).toBe(false);
    expect(await q.check(req)).toBeNull();
    expect(await h.redis.hget(key, "b")).toBe("0");
    // a count quota removed: not free until its counter is removed by the check
    registry.set("acme", {});
    expect(q.free(req)).toBe(false);
    expect(await q.check(req)).toBeNull();
    expect(await h.redis.hexists(key, "b")).toBe(0);
    expect(q.free(req)).toBe(true);
    // its other count quota (waitingWaits, kept) does not stop a producer request once set right
    registry.set("acme", { waitingWaits: 5 });
    expect(q.free(req)).toBe(false); // its kept counts changed: set right first
    expect(await q.check(req)).toBeNull();
    expect(q.free(req)).toBe(true);
    expect(q.free({ tenant: "acme", count: "waitingWaits" })).toBe(false);
  });

  it("a tenant without count quotas has no counters written; its usage is counted from the indexes", async () => {
    const h = makeStore();
    await h.store.register("acme", spec("r1"));
    expect(await h.redis.exists(h.store.keys.tenantQuota("acme").counts)).toBe(0);
    expect(await h.store.quotas.usage("acme")).toEqual({ waitingWaits: 1, bufferedEvents: 0 });
    expect(
      await h.store.quotas.check({ tenant: "acme", count: "waitingWaits", rate: "hostRequestsPerSec" }),
    ).toBeNull();
  });
});

describe("rate quotas", () => {
  it("a limiter held in Redis: two connections (two processes) share one rate, and a refusal takes nothing", async () => {
    const config = parseConfig({ partitions: 2, quotas: { hostRequestsPerSec: 5 } });
    const prefix = uniquePrefix("quota");
    const stores = [0, 1].map(
      (i) =>
        new Store({
          redis: trackOpen(createRedis(redisUrl(), { name: `q${i}` })),
          prefix,
          config,
        }),
    );
    const [a, b] = stores as [Store, Store];
    const req = { tenant: "acme", rate: "hostRequestsPerSec" as const };
    const outcomes = [];
    for (let i = 0; i < 10; i++) outcomes.push(await (i % 2 ? b : a).quotas.check(req));
    expect(outcomes.filter((o) => o === null)).toHaveLength(5);
    const refused = outcomes.filter((o) => o !== null);
    expect(refused[0]).toMatchObject({ kind: "rate", quota: "hostRequestsPerSec", limit: 5, retryAfterSec: 1 });
    // another tenant has its own limiter
    expect(await a.quotas.check({ ...req, tenant: "other" })).toBeNull();
    // after a fifth of a second one more fits
    await new Promise((r) => setTimeout(r, 250));
    expect(await b.quotas.check(req)).toBeNull();
    expect(await a.quotas.check(req)).not.toBeNull();
    for (const s of stores) s.redis.disconnect();
  });

  it("events: a batch needs min(n, a second's worth) and takes n; the producer's own limit is checked too", async () => {
    const h = makeStore({ quotas: { producerEventsPerSec: 10 } }, false);
    const q = h.store.quotas;
    const take = (n: number, perSec?: number) =>
      q.check({ tenant: "acme", rate: "producerEventsPerSec", producer: { id: "svc", perSec }, n });
    // a batch of 30 passes once (in debt for two seconds), the next is refused with about 3 s to wait
    expect(await take(30)).toBeNull();
    const r = await take(1);
    expect(r).toMatchObject({ kind: "rate", quota: "producerEventsPerSec" });
    expect(r?.retryAfterSec).toBeGreaterThanOrEqual(2);
    // the producer's own limit refuses by itself, and takes nothing from the tenant's
    const h2 = makeStore({ quotas: { producerEventsPerSec: 100 } }, false);
    const own = (n: number) =>
      h2.store.quotas.check({ tenant: "acme", rate: "producerEventsPerSec", producer: { id: "svc", perSec: 2 }, n });
    expect(await own(2)).toBeNull();
    expect(await own(1)).toMatchObject({ kind: "rate", quota: "rateLimitPerSec", limit: 2 });
    // its limiters are fields of the tenant's quota hash, in the tenant's slot
    const key = h2.store.keys.tenantQuota("acme").counts;
    expect((await h2.redis.hkeys(key)).sort()).toEqual(["p", "p:svc"]);
    expect(key).toMatch(new RegExp(`^\\{${h2.prefix}:q:acme\\}:`));
  });
});
