/**
 * The producer client against the real ingest routes on a real listening port
 * and a real Redis: signing, keys, typed results and errors, and retries.
 */
import { createHmac } from "node:crypto";
import { createServer } from "node:http";
import { type ConfigInput, createLogger, createRedis, parseConfig, Store } from "@rendezvous/engine";
import { frameworkErrors, ingestRoutes } from "@rendezvous/http";
import { freePort, redisUrl, trackOpen, uniquePrefix } from "@rendezvous/testkit";
import Fastify from "fastify";
import { describe, expect, it } from "vitest";
import { backoff, ProducerClient, RendezvousApiError, RendezvousNetworkError, signatureHeader } from "../src/index.js";

const CONFIG: ConfigInput = {
  partitions: 4,
  maxPayloadBytes: 4096,
  tenants: {
    acme: {
      hostKeys: ["hk_acme"],
      producers: {
        billing: { secrets: ["whsec_1", "whsec_2"], keys: ["pk_billing"], eventTypes: ["order.*"] },
        slow: { keys: ["pk_slow"], eventTypes: ["*"], rateLimitPerSec: 1 },
      },
    },
  },
  eventTypes: {
    "order.paid": {
      payloadSchema: { type: "object", required: ["amount"], properties: { amount: { type: "number" } } },
    },
  },
};

async function listen() {
  const redis = createRedis(redisUrl(), { name: "client-test" });
  const config = parseConfig(CONFIG);
  const store = new Store({ redis, prefix: uniquePrefix("cli"), config });
  const app = Fastify({ frameworkErrors });
  await app.register(ingestRoutes, { store, config, logger: createLogger({ level: "silent" }) });
  await app.listen({ host: "127.0.0.1", port: 0 });
  trackOpen(app);
  trackOpen(redis);
  const address = app.server.address();
  const port = typeof address === "object" && address ? address.port : 0;
  return { baseUrl: `http://127.0.0.1:${port}`, store };
}

const paid = (id: string, amount: unknown = 10) => ({
  id,
  type: "order.paid",
  correlationId: `ord-${id}`,
  payload: { amount } as Record<string, unknown>,
});

describe("ProducerClient (real port)", () => {
  it("publishes signed and keyed; accepted, then duplicate with the original; batches in order", async () => {
    const { baseUrl, store } = await listen();
    const signed = new ProducerClient({ baseUrl, tenant: "acme", producer: "billing", secret: "whsec_2" });
    const first = await signed.publish(paid("o1"));
    expect(first.status).toBe("accepted");
    expect(first.event).toMatchObject({ id: "o1", tenant: "acme", producer: "billing", status: "pending" });
    const keyed = new ProducerClient({
      baseUrl: `${baseUrl}/`,
      tenant: "acme",
      producer: "billing",
      key: "pk_billing",
    });
    const again = await keyed.publish(paid("o1"));
    expect(again).toEqual({ status: "duplicate", event: expect.objectContaining({ streamId: first.event.streamId }) });

    const results = await signed.publishBatch([
      paid("o2"),
      paid("o3", "ten"),
      paid("o1"),
      { ...paid("o4"), type: "x.y" },
    ]);
    expect(results.map((r) => (r.status === "rejected" ? r.error.code : r.status))).toEqual([
      "accepted",
      "invalid_event",
      "duplicate",
      "forbidden_event_type",
    ]);
    const rejected = results[1];
    if (rejected?.status !== "rejected") throw new Error("expected a rejection");
    expect(rejected.error.issues).toEqual([{ path: ["payload", "amount"], message: "must be number" }]);
    expect(await store.getEvent("acme", "billing", "o2")).not.toBeNull();
  });

  it("throws a typed error with the API code (no retry for 4xx)", async () => {
    const { baseUrl } = await listen();
    const client = new ProducerClient({ baseUrl, tenant: "acme", producer: "billing", secret: "whsec_1" });
    await client.publish(paid("c1"));
    const conflict = await client.publish(paid("c1", 99)).catch((e: unknown) => e);
    expect(conflict).toBeInstanceOf(RendezvousApiError);
    expect(conflict).toMatchObject({ code: "event_id_conflict", status: 409 });
    const invalid = await client.publish(paid("c2", "x")).catch((e: unknown) => e);
    expect(invalid).toMatchObject({ code: "invalid_event", status: 400, issues: [{ path: ["payload", "amount"] }] });
    const wrong = new ProducerClient({ baseUrl, tenant: "acme", producer: "billing", secret: "whsec_old" });
    const unauthorized = await wrong.publish(paid("c3")).catch((e: unknown) => e);
    expect(unauthorized).toMatchObject({ code: "unauthorized", status: 401 });
  });

  it("an oversized batch is a typed 413 payload_too_large at once (4xx: not retried)", async () => {
    const { baseUrl } = await listen();
    // no retries: the first answer must be the 413 (hostile.test.ts has the server in its
    // own process, where a server closing under the body showed as EPIPE)
    const client = new ProducerClient({ baseUrl, tenant: "acme", producer: "billing", key: "pk_billing", retries: 0 });
    // the batch body limit is 500 × maxPayloadBytes (2 MB here); the server answers once the
    // declared length is known, while the client is still writing the 8 MB body
    const fat = { ...paid("fat"), payload: { amount: 1, note: "x".repeat(8_000_000) } };
    for (let n = 0; n < 5; n++) {
      const error = await client.publishBatch([fat]).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(RendezvousApiError);
      expect(error).toMatchObject({ code: "payload_too_large", status: 413 });
    }
  });

  it("retries 429 after Retry-After and succeeds; the event is stored once", async () => {
    const { baseUrl, store } = await listen();
    const client = new ProducerClient({ baseUrl, tenant: "acme", producer: "slow", key: "pk_slow", minDelayMs: 10 });
    const started = Date.now();
    expect((await client.publish({ id: "s1", type: "job.done", correlationId: "j1" })).status).toBe("accepted");
    expect((await client.publish({ id: "s2", type: "job.done", correlationId: "j2" })).status).toBe("accepted");
    expect(Date.now() - started).toBeGreaterThanOrEqual(900); // waited for Retry-After: 1
    expect(await store.getEvent("acme", "slow", "s2")).toMatchObject({ id: "s2" });
    const noRetry = new ProducerClient({ baseUrl, tenant: "acme", producer: "slow", key: "pk_slow", retries: 0 });
    const limited = await noRetry.publish({ id: "s3", type: "job.done", correlationId: "j3" }).catch((e: unknown) => e);
    expect(limited).toMatchObject({ code: "rate_limited", status: 429 });
  });

  it("retries a 5xx and resends the same event: the retry is answered, never stored twice", async () => {
    const { baseUrl, store } = await listen();
    // a real proxy in front of the API that fails the first attempt with 503 after forwarding it
    let attempts = 0;
    const proxy = createServer(async (req, res) => {
      attempts++;
      const chunks: Buffer[] = [];
      for await (const chunk of req) chunks.push(chunk as Buffer);
      const upstream = await fetch(`${baseUrl}${req.url}`, {
        method: req.method,
        headers: req.headers as Record<string, string>,
        body: Buffer.concat(chunks),
      });
      const text = await upstream.text();
      if (attempts === 1) {
        res.writeHead(503, { "content-type": "application/json" });
        res.end(JSON.stringify({ error: { code: "unavailable", message: "lost answer" } }));
        return;
      }
      res.writeHead(upstream.status, { "content-type": "application/json" });
      res.end(text);
    });
    const port = await freePort();
    await new Promise<void>((resolve) => proxy.listen(port, "127.0.0.1", resolve));
    trackOpen({ close: () => new Promise<void>((resolve) => proxy.close(() => resolve())) });
    const client = new ProducerClient({
      baseUrl: `http://127.0.0.1:${port}`,
      tenant: "acme",
      producer: "billing",
      secret: "whsec_1",
      minDelayMs: 10,
    });
    const result = await client.publish(paid("r1"));
    expect(attempts).toBe(2);
    // the first attempt was stored; the retry is its duplicate, with the original stream entry
    expect(result.status).toBe("duplicate");
    expect(result.event.streamId).toBe((await store.getEvent("acme", "billing", "r1"))?.streamId);
  });

  it("gives up with a typed network error when nothing listens", async () => {
    const port = await freePort();
    const client = new ProducerClient({
      baseUrl: `http://127.0.0.1:${port}`,
      tenant: "acme",
      producer: "billing",
      key: "pk_billing",
      retries: 2,
      minDelayMs: 5,
    });
    const error = await client.publish(paid("n1")).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RendezvousNetworkError);
  });

  it("signs as docs/api.md says and backs off within bounds", () => {
    const v1 = createHmac("sha256", "s").update('1700000000.{"a":1}').digest("hex");
    expect(signatureHeader("s", '{"a":1}', 1_700_000_000_999)).toBe(`t=1700000000,v1=${v1}`);
    for (let n = 0; n < 10; n++) {
      const d = backoff(n, 100, 5000);
      expect(d).toBeGreaterThanOrEqual(Math.min(5000, 100 * 2 ** n) / 2);
      expect(d).toBeLessThanOrEqual(5000);
    }
  });
});
