import { pino } from "pino";
import { describe, expect, it } from "vitest";
import { createResources, parseConfig, startRedisServer } from "../src/index.js";

describe("resources", () => {
  it("close() returns promptly while Redis is down, with commands queued", async () => {
    const server = await startRedisServer();
    const res = createResources({ redisUrl: server.url, config: parseConfig({}), logger: pino({ level: "silent" }) });
    const blocking = res.connect("blocking", { blocking: true });
    await res.redis.ping();
    await blocking.ping();
    await server.kill();
    // a command in the offline queue: QUIT would wait behind it through every reconnection
    void res.redis.ping().catch(() => undefined);
    await new Promise((r) => setTimeout(r, 100));
    const started = Date.now();
    await res.close();
    expect(Date.now() - started).toBeLessThan(3000);
    await server.stop();
  });
});
