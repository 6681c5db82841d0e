import type { ChainableCommander } from "ioredis";
import { describe, expect, it } from "vitest";
import { execBatch, hashTag, isClusterUrl, parseRedisUrl } from "../src/index.js";
import { makeStore } from "./helpers.js";

describe("Redis URLs", () => {
  it("redis:// and rediss:// name one server; redis+cluster:// lists seed nodes", () => {
    expect(parseRedisUrl("redis://127.0.0.1:6380/2")).toEqual({ kind: "single", url: "redis://127.0.0.1:6380/2" });
    expect(isClusterUrl("redis://h:1")).toBe(false);
    expect(parseRedisUrl("redis+cluster://10.0.0.1:7000,10.0.0.2:7001,node-3")).toEqual({
      kind: "cluster",
      nodes: [
        { host: "10.0.0.1", port: 7000 },
        { host: "10.0.0.2", port: 7001 },
        { host: "node-3", port: 6379 },
      ],
      username: undefined,
      password: undefined,
      tls: false,
    });
    expect(parseRedisUrl("rediss+cluster://app:s%40cret@[::1]:7000,h2:7001/")).toMatchObject({
      kind: "cluster",
      nodes: [
        { host: "::1", port: 7000 },
        { host: "h2", port: 7001 },
      ],
      username: "app",
      password: "s@cret",
      tls: true,
    });
    expect(() => parseRedisUrl("redis+cluster://")).toThrow(/no seed node/);
    expect(() => parseRedisUrl("redis+cluster://h:99999")).toThrow(/bad seed node/);
  });

  it("hashTag follows the cluster rule: the first non-empty {…}, else the whole key", () => {
    expect(hashTag("{rdv:p3}:s")).toBe("rdv:p3");
    expect(hashTag("{rdv}:timeouts:wait")).toBe("rdv");
    expect(hashTag("plain")).toBe("plain");
    expect(hashTag("{}x{y}")).toBe("{}x{y}");
    expect(hashTag("a{b}{c}")).toBe("b");
  });

  it("execBatch answers in the order of the commands, errors per command", async () => {
    const h = makeStore();
    const keys = h.store.keys.allPartitions().map((p) => h.store.keys.partition(p).waits);
    const replies = await execBatch(h.redis, [
      ...keys.map((key, i) => ({ key, add: (p: ChainableCommander) => p.hset(key, "f", String(i)) })),
      { key: null, add: (p) => p.echo("x") },
      ...keys.map((key) => ({ key, add: (p: ChainableCommander) => p.hget(key, "f") })),
      { key: keys[0] as string, add: (p) => p.lpush(keys[0] as string, "wrong type") },
    ]);
    expect(replies.slice(keys.length, -1).map(([, v]) => v)).toEqual(["x", ...keys.map((_, i) => String(i))]);
    expect(replies.at(-1)?.[0]?.message).toMatch(/WRONGTYPE/);
  });
});
