/**
 * /readyz's write probe (RedisReadiness) on a redis-server of the test's own: cheap (one
 * SET per TTL however often it is asked), and it tells a full, a frozen and a healthy Redis apart.
 */
import { createRedis, createResources, parseConfig, type Resources } from "@rendezvous/engine";
import { RedisReadiness } from "@rendezvous/http";
import { startRedisServer } from "@rendezvous/testkit";
import { pino } from "pino";
import { describe, expect, it } from "vitest";

/** SET calls Redis has run so far (INFO commandstats). */
async function setCalls(redis: ReturnType<typeof createRedis>): Promise<number> {
  return Number(/cmdstat_set:calls=(\d+)/.exec(await redis.info("commandstats"))?.[1] ?? 0);
}

describe("readiness probe", () => {
  it("one write per TTL however often asked; redis_oom when full, redis_timeout when frozen, ok again after", async () => {
    const server = await startRedisServer();
    const admin = createRedis(server.url, { name: "test-admin" });
    const res: Resources = createResources({
      redisUrl: server.url,
      prefix: "ready",
      config: parseConfig({}),
      logger: pino({ level: "silent" }),
      commandTimeoutMs: 2000,
    });
    try {
      const readiness = new RedisReadiness(res, { ttlMs: 300, timeoutMs: 500 });
      await res.redis.ping();
      const before = await setCalls(admin);
      const started = Date.now();
      let asked = 0;
      while (Date.now() - started < 1000) {
        const answers = await Promise.all(Array.from({ length: 10 }, () => readiness.check()));
        for (const a of answers) expect(a).toEqual({ ok: true });
        asked += answers.length;
        await new Promise((r) => setTimeout(r, 10));
      }
      const writes = (await setCalls(admin)) - before;
      expect(asked).toBeGreaterThan(200);
      expect(writes).toBeGreaterThanOrEqual(1);
      expect(writes).toBeLessThanOrEqual(Math.ceil((Date.now() - started) / 300) + 1);
      expect(Number(await admin.pttl("{ready:meta}:ready"))).toBeGreaterThan(50_000);

      await admin.config("SET", "maxmemory", "1"); // far below what is used: every write refused
      await new Promise((r) => setTimeout(r, 350));
      expect(await readiness.check()).toEqual({ ok: false, reason: "redis_oom" });
      await admin.config("SET", "maxmemory", "0");
      await new Promise((r) => setTimeout(r, 350));
      expect(await readiness.check()).toEqual({ ok: true });

      process.kill(server.pid, "SIGSTOP");
      await new Promise((r) => setTimeout(r, 350));
      const t = Date.now();
      expect(await readiness.check()).toEqual({ ok: false, reason: "redis_timeout" });
      expect(Date.now() - t).toBeLessThan(1000);
      process.kill(server.pid, "SIGCONT");
      await new Promise((r) => setTimeout(r, 350));
      expect(await readiness.check()).toEqual({ ok: true });
    } finally {
      process.kill(server.pid, "SIGCONT");
      await res.close();
      admin.disconnect();
      await server.stop();
    }
  });
});
