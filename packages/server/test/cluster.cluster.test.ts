/**
 * What is particular to a Redis Cluster (project `cluster`: `redisUrl()` is a local
 * 3-master cluster): resources know it, BullMQ queues get the hash-tagged prefix,
 * consumer loops read each partition on its own connection, batches over every
 * partition answer in order, the partition count is stored and checked, and doctor
 * checks every master and the cluster state.
 */
import {
  type ConfigInput,
  createResources,
  ensurePartitionCount,
  execBatch,
  parseConfig,
  Store,
} from "@rendezvous/engine";
import { redisUrl, trackOpen, uniquePrefix } from "@rendezvous/testkit";
import { Matcher } from "@rendezvous/workers";
import type { ChainableCommander } from "ioredis";
import { pino } from "pino";
import { describe, expect, it } from "vitest";
import { runDoctor } from "../src/doctor.js";

const CONFIG: ConfigInput = { partitions: 8, tenants: { acme: { hostKeys: ["hk"] } } };

function resources(config: ConfigInput = CONFIG) {
  const res = createResources({
    redisUrl: redisUrl(),
    prefix: uniquePrefix("k"),
    config: parseConfig(config),
    logger: pino({ level: "silent" }),
  });
  trackOpen({ quit: () => res.close() });
  return res;
}

describe("on a Redis Cluster", () => {
  it("resources: cluster mode, BullMQ prefix {<prefix>}, one reader per partition stream", async () => {
    const res = resources();
    expect(res.cluster).toBe(true);
    expect(res.queuePrefix).toBe(`{${res.prefix}}`);
    const matcher = new Matcher(res, { blockMs: 100 });
    await matcher.start();
    try {
      expect(matcher.loop.readers).toBe(8);
    } finally {
      await matcher.stop();
    }
  });

  it("a batch over every partition answers in order", async () => {
    const res = resources();
    const keys = res.store.keys.allPartitions().map((p) => res.store.keys.partition(p).waits);
    const replies = await execBatch(res.redis, [
      ...keys.map((key, i) => ({ key, add: (p: ChainableCommander) => p.hset(key, "f", String(i)) })),
      { key: null, add: (p: ChainableCommander) => p.time() },
      ...keys.map((key) => ({ key, add: (p: ChainableCommander) => p.hget(key, "f") })),
    ]);
    expect(replies.every(([err]) => err === null)).toBe(true);
    expect(replies.slice(keys.length + 1).map(([, v]) => v)).toEqual(keys.map((_, i) => String(i)));
  });

  it("the partition count is stored once and another count is refused", async () => {
    const res = resources();
    await ensurePartitionCount(res.store);
    const other = new Store({
      redis: res.redis,
      prefix: res.prefix,
      config: parseConfig({ ...CONFIG, partitions: 4 }),
    });
    await expect(ensurePartitionCount(other)).rejects.toThrow(/created with 8 partitions/);
  });

  it("doctor checks every master and the cluster state", async () => {
    const res = resources();
    const checks = await runDoctor(redisUrl(), res.config, res.prefix);
    const by = Object.fromEntries(checks.map((c) => [c.name, c]));
    expect(by["cluster state"]).toMatchObject({ ok: true, value: "ok (all 3 masters)" });
    expect(by["redis version"]?.ok).toBe(true);
    expect(by["maxmemory-policy"]).toMatchObject({ ok: true, value: "noeviction (all 3 masters)" });
    expect(by.aof).toMatchObject({ ok: false, value: "off (all 3 masters)" }); // the test cluster runs without AOF
    expect(by.placement?.ok).toBe(true);
  });
});
