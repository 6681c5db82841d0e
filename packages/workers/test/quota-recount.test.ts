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
    await store.register("t0", { runId: "r", position: "p", eventType: "job.done", correlationId: "c" });
    for (const t of tenants) await store.redis.hset(store.keys.tenantQuota(t).counts, "w", 5);
    const recount = new QuotaRecount();
    // the tenant without a count quota is not recounted
    expect(await recount.step(store, [...tenants, "free"], 60_000, 0)).toBe(RECOUNT_PER_STEP);
    expect(await recount.step(store, tenants, 60_000, 1000)).toBe(50);
    expect((await store.quotas.usage("t0")).waitingWaits).toBe(1);
    expect((await store.quotas.usage(`t${n - 1}`)).waitingWaits).toBe(0);
    // the next round waits for recountMs from the start of the last
    expect(await recount.step(store, tenants, 60_000, 2000)).toBe(0);
    expect(await recount.step(store, tenants, 60_000, 60_000)).toBe(RECOUNT_PER_STEP);
    store.redis.disconnect();
  });
});
