/**
 * The registry's subscriber on a Redis Cluster (subscriber.ts): one node at a time, another
 * node when that one dies, and a capped backoff while none is reachable (ioredis's own
 * cluster subscriber reconnected in a tight loop there: over a core and ~1 GB a minute).
 */
import { createResources, NodeSubscriber, parseConfig, type Resources } from "@rendezvous/engine";
import { type RedisCluster, startRedisCluster, trackOpen, uniquePrefix } from "@rendezvous/testkit";
import { Redis } from "ioredis";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function publishOn(port: number, channel: string, message: string): Promise<void> {
  const r = new Redis({ host: "127.0.0.1", port, lazyConnect: true, retryStrategy: () => null });
  try {
    await r.connect();
    await r.publish(channel, message);
  } finally {
    r.disconnect();
  }
}

describe("the registry's subscriber on a Redis Cluster", () => {
  let cluster: RedisCluster;
  beforeAll(async () => {
    cluster = await startRedisCluster({ masters: 3, replicas: 0 });
  }, 60_000);
  afterAll(async () => {
    await cluster?.stop();
  });

  it("moves to another node when its node dies, and backs off while no node answers", async () => {
    const res: Resources = createResources({
      redisUrl: cluster.url,
      prefix: uniquePrefix("sub"),
      config: parseConfig({ tenants: {} }),
      logger: pino({ level: "silent" }),
    });
    trackOpen({ quit: () => res.close() });
    await res.redis.ping();
    const sub = res.subscriber("test-subscriber");
    expect(sub).toBeInstanceOf(NodeSubscriber);
    const ns = sub as NodeSubscriber;
    const got: string[] = [];
    sub.on("message", (channel, message) => {
      if (channel === "chan") got.push(message);
    });
    await sub.subscribe("chan");
    const ports = cluster.nodes.map((n) => n.port);
    const first = Number(ns.node?.split(":")[1]);
    expect(ports).toContain(first);

    // a PUBLISH on any node reaches a subscriber on another
    const other = ports.find((p) => p !== first) as number;
    await publishOn(other, "chan", "m1");
    for (let i = 0; i < 50 && !got.includes("m1"); i++) await sleep(100);
    expect(got).toContain("m1");

    // its node dies: it subscribes again through a live one
    await cluster.kill(first);
    const live = ports.filter((p) => p !== first);
    for (let i = 0; i < 75 && !got.includes("m2"); i++) {
      await publishOn(live[i % live.length] as number, "chan", "m2").catch(() => undefined);
      await sleep(200);
    }
    expect(got).toContain("m2");
    expect(ns.node).not.toBe(`127.0.0.1:${first}`);
    expect(sub.status).toBe("ready");

    // no node answers: a few tries in 3 s (100, 200, 400, 800, 1,600 ms apart), not a loop
    await cluster.stop();
    await sleep(300);
    const before = ns.opened;
    await sleep(3000);
    const tries = ns.opened - before;
    expect(tries).toBeGreaterThanOrEqual(1);
    expect(tries).toBeLessThanOrEqual(8);

    await res.close();
    expect(sub.status).toBe("end");
    const after = ns.opened;
    await sleep(500);
    expect(ns.opened).toBe(after);
  }, 60_000);
});
