/**
 * The command timeout of command connections (RENDEZVOUS_REDIS_COMMAND_TIMEOUT_MS): a
 * frozen Redis, or one that is down (commands in the offline queue), rejects a command
 * after the bound with the command-timeout error; blocking connections have no bound.
 */
import { describe, expect, it } from "vitest";
import {
  createBlockingRedis,
  createRedis,
  isCommandTimeout,
  type RedisLike,
  startRedisServer,
  withinCommandTimeout,
} from "../src/index.js";

const BOUND_MS = 300;

/** How long `work` takes to reject, and with what. */
async function rejection(work: Promise<unknown>): Promise<{ ms: number; err: unknown }> {
  const started = Date.now();
  const err = await work.then(
    () => undefined,
    (e: unknown) => e,
  );
  return { ms: Date.now() - started, err };
}

describe("command timeout", () => {
  it("a frozen Redis: a command is rejected after the bound; the connection works once Redis wakes", async () => {
    const server = await startRedisServer();
    const redis = createRedis(server.url, { name: "t-frozen", commandTimeoutMs: BOUND_MS });
    try {
      await redis.set("k", "1");
      process.kill(server.pid, "SIGSTOP");
      const { ms, err } = await rejection(redis.incr("k"));
      expect(isCommandTimeout(err)).toBe(true);
      expect(ms).toBeGreaterThanOrEqual(BOUND_MS - 20);
      expect(ms).toBeLessThan(BOUND_MS + 500);
      process.kill(server.pid, "SIGCONT");
      // the timed-out INCR was sent: it ran when Redis woke (its outcome was unknown, not refused)
      expect(await redis.get("k")).toBe("2");
    } finally {
      process.kill(server.pid, "SIGCONT");
      redis.disconnect();
      await server.stop();
    }
  });

  it("a Redis that is down: the offline queue does not hold a command past the bound", async () => {
    const server = await startRedisServer();
    const redis = createRedis(server.url, { name: "t-down", commandTimeoutMs: BOUND_MS });
    redis.on("error", () => {});
    try {
      await redis.ping();
      await server.kill();
      await new Promise((r) => setTimeout(r, 100));
      expect(redis.status).not.toBe("ready");
      const { ms, err } = await rejection(redis.get("k"));
      expect(isCommandTimeout(err)).toBe(true);
      expect(ms).toBeLessThan(BOUND_MS + 500);
    } finally {
      redis.disconnect();
      await server.stop();
    }
  });

  it("blocking connections take no bound; withinCommandTimeout bounds what has none", async () => {
    const server = await startRedisServer();
    const conns: RedisLike[] = [];
    try {
      const blocking = createBlockingRedis(server.url, { commandTimeoutMs: BOUND_MS });
      conns.push(blocking);
      // a blocking read longer than the bound answers null at its own timeout, not an error
      expect(await blocking.blpop("nothing", 0.6)).toBeNull();
      const { ms, err } = await rejection(withinCommandTimeout(BOUND_MS, new Promise(() => {})));
      expect(isCommandTimeout(err)).toBe(true);
      expect(ms).toBeLessThan(BOUND_MS + 500);
      expect(await withinCommandTimeout(BOUND_MS, Promise.resolve(7))).toBe(7);
    } finally {
      for (const c of conns) c.disconnect();
      await server.stop();
    }
  });
});
