import { createRedis, parseConfig, Store } from "@rendezvous/engine";
import { redisUrl, trackOpen, uniquePrefix } from "@rendezvous/testkit";
import { describe, expect, it } from "vitest";
import { QuotaRecount, RECOUNT_PER_STEP } from "../src/retention.js";

describe("quota recount", () => {
  it("sets drifted counts back from the indexes, a step of tenants at a time, a round at most every recountMs", async () => {
    const n = RECOUNT_PER_STEP + 50;
    const tenants = Array.from({ length: n }, (_, i) => `t${i}`);
    const config = parseConfig({
      partitions: 2,
      quotas: { waitingWaits: 10 },
      tenants: { free: { quotas: { waitingWaits: null } } },
    });
    const store = new Store({
      redis: trackOpen(createRedis(redisUrl(), { name: "recount" })),
      prefix: uniquePrefix(),
      config,
    });
    const held = (t: string) => store.redis.hget(store.keys.tenantQuota(t).counts, "w");
    await store.register("t0", { runId: "r", position: "p", eventType: "job.done", correlationId: "c" });
    for (const t of tenants) await store.redis.hset(store.keys.tenantQuota(t).counts, "w", 5);
    const recount = new QuotaRecount();
    // the tenant without a count quota is not recounted; a count found off is not set at
    // the first look, but at the next step's, which finds it off by as much
    expect(await recount.step(store, [...tenants, "free"], 60_000, 0)).toBe(RECOUNT_PER_STEP);
    expect(await held("t0")).toBe("5");
    expect(await recount.step(store, tenants, 60_000, 1000)).toBe(50);
    expect(await held("t0")).toBe("1");
    expect(await held(`t${n - 1}`)).toBe("5");
    // the next round waits for recountMs from the start of the last; the step between
    // looks again at the tenants found off
    expect(await recount.step(store, tenants, 60_000, 2000)).toBe(0);
    expect((await store.quotas.usage("t0")).waitingWaits).toBe(1);
    expect((await store.quotas.usage(`t${n - 1}`)).waitingWaits).toBe(0);
    expect(await recount.step(store, tenants, 60_000, 60_000)).toBe(RECOUNT_PER_STEP);
    store.redis.disconnect();
  });

  it("does not count twice a transition whose count update is in flight at the look", async () => {
    const config = parseConfig({ partitions: 2, quotas: { waitingWaits: 10 } });
    const store = new Store({
      redis: trackOpen(createRedis(redisUrl(), { name: "recount-inflight" })),
      prefix: uniquePrefix(),
      config,
    });
    const key = store.keys.tenantQuota("busy").counts;
    const spec = (runId: string) => ({ runId, position: "p", eventType: "job.done", correlationId: runId });
    await store.register("busy", spec("r1"));
    expect(await store.redis.hget(key, "w")).toBe("1");
    // a registration committed, its HINCRBY not yet landed: the index holds 2, the counter 1
    await store.register("busy", spec("r2"));
    await store.redis.hincrby(key, "w", -1);
    const recount = new QuotaRecount();
    expect(await recount.step(store, ["busy"], 1000, 0)).toBe(1);
    expect(await store.redis.hget(key, "w")).toBe("1");
    // the update lands; the next step finds the count right and leaves it
    await store.redis.hincrby(key, "w", 1);
    await recount.step(store, ["busy"], 1000, 500);
    expect(await store.redis.hget(key, "w")).toBe("2");
    // two updates in flight at one look, one at the next: different, so nothing set
    await store.redis.hincrby(key, "w", -2);
    await recount.step(store, ["busy"], 1000, 1000);
    await store.redis.hincrby(key, "w", 1);
    await recount.step(store, ["busy"], 1000, 1500);
    await store.redis.hincrby(key, "w", 1);
    await recount.step(store, ["busy"], 1000, 2000);
    expect(await store.redis.hget(key, "w")).toBe("2");
    // an update lost for good (a crash between the transition and it) is set right at the second look
    await store.redis.hincrby(key, "w", -1);
    await recount.step(store, ["busy"], 1000, 3000);
    expect(await store.redis.hget(key, "w")).toBe("1");
    await recount.step(store, ["busy"], 1000, 3500);
    expect(await store.redis.hget(key, "w")).toBe("2");
    store.redis.disconnect();
  });

  it("covers the tenants whose count quota comes from the registry's limits, as the registry has them now", async () => {
    const config = parseConfig({ partitions: 2, tenants: { filed: { quotas: { bufferedEvents: 5 } } } });
    const store = new Store({
      redis: trackOpen(createRedis(redisUrl(), { name: "recount-registry" })),
      prefix: uniquePrefix(),
      config,
    });
    const registry = new Map<string, Record<string, number>>([
      ["made", { waitingWaits: 3 }],
      ["rated", { hostRequestsPerSec: 9 }],
    ]);
    store.quotas.follow((t) => registry.get(t));
    await store.register("made", { runId: "r", position: "p", eventType: "job.done", correlationId: "c" });
    for (const t of ["made", "rated", "filed"]) await store.redis.hset(store.keys.tenantQuota(t).counts, "w", 7);
    const recount = new QuotaRecount();
    // "rated" has a rate only: no count to keep; the file's tenant keeps its file quota
    expect(await recount.step(store, ["made", "rated", "filed"], 1000, 0)).toBe(2);
    // (the file's tenant keeps bufferedEvents only: its stale "w" is removed at once)
    expect(await store.redis.hmget(store.keys.tenantQuota("filed").counts, "w", "b")).toEqual([null, null]);
    expect(await recount.step(store, ["made", "rated", "filed"], 1000, 500)).toBe(0);
    expect(await store.redis.hget(store.keys.tenantQuota("made").counts, "w")).toBe("1");
    expect(await store.redis.hmget(store.keys.tenantQuota("filed").counts, "w", "b")).toEqual([null, "0"]);
    expect(await store.redis.hget(store.keys.tenantQuota("rated").counts, "w")).toBe("7");
    // a count quota set through the API later: the next round covers the tenant
    registry.set("rated", { hostRequestsPerSec: 9, bufferedEvents: 100 });
    expect(await recount.step(store, ["made", "rated", "filed"], 1000, 1000)).toBe(3);
    expect(await recount.step(store, ["made", "rated", "filed"], 1000, 1500)).toBe(0);
    expect(await store.redis.hget(store.keys.tenantQuota("rated").counts, "b")).toBe("0");
    // the counts a tenant has no quota on are not kept: removed, not left to go stale
    expect(await store.redis.hget(store.keys.tenantQuota("rated").counts, "w")).toBeNull();
    store.redis.disconnect();
  });
});
