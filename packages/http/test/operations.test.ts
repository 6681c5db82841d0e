import { createLogger, createMetrics, createRedis, parseConfig, Store } from "@rendezvous/engine";
import { freePort, redisUrl, trackOpen, uniquePrefix } from "@rendezvous/testkit";
import Fastify from "fastify";
import { describe, expect, it } from "vitest";
import { ingestRoutes } from "../src/index.js";
import { allKeys, CONFIG, ev, makeApp, publish, publishBatch, snapshot, streamLength } from "./helpers.js";

const SLOW = {
  tenants: {
    ...CONFIG.tenants,
    acme: {
      hostKeys: ["hk_acme"],
      producers: {
        slow: { keys: ["pk_slow"], eventTypes: ["*"], rateLimitPerSec: 5 },
        ship: { keys: ["pk_ship"], eventTypes: ["*"] },
      },
    },
  },
};
const asSlow = { producer: "acme/slow", key: "pk_slow" };

async function metricValue(h: Awaited<ReturnType<typeof makeApp>>, name: string, labels: Record<string, string>) {
  const metric = (await h.metrics.registry.getMetricsAsJSON()).find((m) => m.name === name);
  const value = (metric?.values as Array<{ value: number; labels: Record<string, string> }> | undefined)?.find((v) =>
    Object.entries(labels).every(([k, l]) => v.labels[k] === l),
  );
  return value?.value ?? 0;
}

describe("rate limit", () => {
  it("over rateLimitPerSec a producer gets 429 rate_limited with Retry-After; nothing stored; it recovers", async () => {
    const clock = { now: 1_900_000_000_000 };
    const h = await makeApp(SLOW, { now: () => clock.now });
    for (let i = 0; i < 5; i++) expect((await publish(h, ev(`r${i}`), asSlow)).statusCode).toBe(202);
    const before = await snapshot(h);
    const limited = await publish(h, ev("r5"), asSlow);
    expect(limited.statusCode).toBe(429);
    expect(limited.headers["retry-after"]).toBe("1");
    expect(limited.json().error).toMatchObject({ code: "rate_limited", retryAfter: 1 });
    expect(await snapshot(h)).toEqual(before);
    // another producer is not affected, nor is one without a limit
    for (let i = 0; i < 20; i++) {
      expect((await publish(h, ev(`s${i}`), { producer: "acme/ship", key: "pk_ship" })).statusCode).toBe(202);
    }
    clock.now += 200; // one event's worth
    expect((await publish(h, ev("r5"), asSlow)).statusCode).toBe(202);
    expect((await publish(h, ev("r6"), asSlow)).statusCode).toBe(429);
    expect(await metricValue(h, "rendezvous_events_rejected_total", { reason: "rate_limited" })).toBe(2);
  });

  it("a batch counts its events; a batch larger than a second's worth passes once and then owes", async () => {
    const clock = { now: 1_900_000_000_000 };
    const h = await makeApp(SLOW, { now: () => clock.now });
    const big = await publishBatch(
      h,
      Array.from({ length: 10 }, (_, i) => ev(`b${i}`)),
      asSlow,
    );
    expect(big.statusCode).toBe(200);
    const next = await publish(h, ev("n1"), asSlow);
    expect(next.statusCode).toBe(429);
    expect(next.headers["retry-after"]).toBe("2"); // 5 owed + 1 needed at 5/s
    clock.now += 1000;
    expect((await publish(h, ev("n1"), asSlow)).statusCode).toBe(429);
    clock.now += 1000;
    expect((await publish(h, ev("n1"), asSlow)).statusCode).toBe(202);
    expect(await streamLength(h)).toBe(11);
  });
});

describe("refusal records", () => {
  it("refused events with a readable type and correlation id are remembered (reason, no payload)", async () => {
    const h = await makeApp();
    await publish(h, ev("f1", { type: "order.refunded", payload: { card: "4111-secret" } }));
    await publish(h, { id: "s1", type: "order.paid", correlationId: "ord-1", payload: { amount: "4111-secret" } });
    await publish(h, ev("c1"));
    await publish(h, ev("c1", { payload: { card: "4111-secret" } }));
    const forbidden = await h.store.rejections("acme", "order.refunded", "job-f1");
    expect(forbidden).toEqual([
      {
        producer: "billing",
        eventId: "f1",
        reason: "forbidden_event_type",
        detail: expect.any(String),
        at: expect.stringMatching(/Z$/),
      },
    ]);
    const schema = await h.store.rejections("acme", "order.paid", "ord-1");
    expect(schema).toMatchObject([{ eventId: "s1", reason: "invalid_event" }]);
    expect(schema[0]?.detail).toContain("payload.amount");
    const conflict = await h.store.rejections("acme", "job.done", "job-c1");
    expect(conflict).toMatchObject([{ eventId: "c1", reason: "event_id_conflict" }]);
    const raw = JSON.stringify(
      await Promise.all((await allKeys(h)).filter((k) => k.endsWith(":rj")).map((k) => h.redis.hgetall(k))),
    );
    expect(raw).not.toContain("4111-secret");
  });

  it("refusal records are capped per match key (newest kept)", async () => {
    const h = await makeApp();
    const refused = Array.from({ length: 25 }, (_, i) =>
      ev(`cap${i}`, { correlationId: "one", type: "order.refunded" }),
    );
    const res = await publishBatch(h, refused);
    expect(res.json().results.every((r: { status: string }) => r.status === "rejected")).toBe(true);
    const kept = await h.store.rejections("acme", "order.refunded", "one");
    expect(kept).toHaveLength(20);
    expect(kept.map((r) => r.eventId)).toEqual(Array.from({ length: 20 }, (_, i) => `cap${i + 5}`));
  });

  it("unauthenticated, rate-limited and unplaceable refusals are not recorded", async () => {
    const h = await makeApp(SLOW);
    await publish(h, ev("u1"), { key: "pk_wrong", producer: "acme/ship" });
    await publish(h, ev("u2", { type: "Bad Type" }), { producer: "acme/ship", key: "pk_ship" });
    await publish(h, ev("u3", { correlationId: "" }), { producer: "acme/ship", key: "pk_ship" });
    await publish(h, "{not json", { producer: "acme/ship", key: "pk_ship" });
    for (let i = 0; i < 8; i++) await publish(h, ev(`r${i}`), asSlow);
    expect((await allKeys(h)).filter((k) => k.endsWith(":rj"))).toEqual([]);
  });
});

describe("metrics and logs", () => {
  it("counts accepted, duplicate and rejected events by reason", async () => {
    const h = await makeApp();
    await publish(h, ev("m1"));
    await publish(h, ev("m1"));
    await publish(h, ev("m1", { payload: {} }));
    await publish(h, ev("m2", { type: "nope.nope" }));
    await publish(h, ev("m3"), { key: "pk_wrong" });
    await publishBatch(h, [ev("m4"), ev("m5", { id: "" })]);
    expect(await metricValue(h, "rendezvous_events_accepted_total", { tenant: "acme" })).toBe(2);
    expect(await metricValue(h, "rendezvous_events_duplicate_total", { tenant: "acme" })).toBe(1);
    for (const [reason, n] of [
      ["event_id_conflict", 1],
      ["forbidden_event_type", 1],
      ["unauthorized", 1],
      ["invalid_event", 1],
    ] as const) {
      expect(await metricValue(h, "rendezvous_events_rejected_total", { reason }), reason).toBe(n);
    }
  });

  it("never logs keys, secrets or signatures, even at trace level and on a 500", async () => {
    const lines: string[] = [];
    const logger = createLogger({
      level: "trace",
      hooks: {
        streamWrite: (s: string) => {
          lines.push(s);
          return "";
        },
      },
    });
    const redis = trackOpen(createRedis(redisUrl()));
    const config = parseConfig(CONFIG);
    const store = new Store({ redis, prefix: uniquePrefix("log"), config });
    const app = trackOpen(Fastify({ loggerInstance: logger }));
    await app.register(ingestRoutes, { store, config, logger, metrics: createMetrics() });
    const h = { app };
    await publish(h, ev("l1"));
    await publish(h, ev("l2"), { secret: "whsec_new" });
    await publish(h, ev("l3"), { secret: "whsec_old", key: "pk_billing" });
    await publish(h, ev("l4"), { key: "pk_wrong_but_secret" });
    await publish(h, ev("l5", { type: "nope" }));
    store.getEvent = async () => {
      throw new Error("boom");
    };
    const failed = await app.inject({ url: "/v1/events/billing/l1", headers: { authorization: "Bearer hk_acme" } });
    expect(failed.statusCode).toBe(500);
    const all = lines.join("");
    expect(all).toContain("ingest request failed");
    for (const secret of ["pk_billing", "whsec_new", "whsec_old", "pk_wrong_but_secret", "hk_acme", "v1="]) {
      expect(all, secret).not.toContain(secret);
    }
  });
});

describe("failures", () => {
  it("an unexpected error is a bare 500 internal: no message, no stack", async () => {
    const h = await makeApp();
    h.store.ingest = async () => {
      throw new Error("secret internals at /etc/rendezvous");
    };
    const res = await publish(h, ev("x1"));
    expect(res.statusCode).toBe(500);
    expect(res.json()).toEqual({ error: { code: "internal", message: "internal error" } });
  });

  it("Redis unreachable answers 503 unavailable (producer and read routes)", async () => {
    const port = await freePort();
    const redis = trackOpen(
      createRedis(`redis://127.0.0.1:${port}`, { options: { maxRetriesPerRequest: 1, connectTimeout: 200 } }),
    );
    redis.on("error", () => {});
    const config = parseConfig(CONFIG);
    const store = new Store({ redis, prefix: uniquePrefix("down"), config });
    const app = trackOpen(Fastify());
    await app.register(ingestRoutes, { store, config, logger: createLogger({ level: "silent" }) });
    const h = { app };
    const res = await publish(h, ev("d1"));
    expect(res.statusCode).toBe(503);
    expect(res.json()).toEqual({
      error: { code: "unavailable", message: "redis unreachable", reason: "redis_down", retryAfter: 1 },
    });
    expect(res.headers["retry-after"]).toBe("1");
    const batch = await publishBatch(h, [ev("d2")]);
    expect(batch.statusCode).toBe(503);
    const read = await app.inject({ url: "/v1/events/billing/d1", headers: { authorization: "Bearer hk_acme" } });
    expect(read.statusCode).toBe(503);
  });
});
