/**
 * Quotas set through the admin API (docs/api.md, "Quotas of a tenant set through the admin
 * API"), with two `rendezvous api` processes and a `scheduler` on one Redis and prefix: a
 * tenant created with `limits` is held to them by both processes; raising a limit lets
 * registrations through within 1 s; a `hostRequestsPerSec` set through the API is one
 * limit over both; the scheduler recounts the registry's tenants; misspelt names are 400.
 */
import { randomBytes } from "node:crypto";
import { createRedis, type RedisLike } from "@rendezvous/engine";
import { type CliProcess, redisUrl, spawnCli, uniquePrefix } from "@rendezvous/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  bearer,
  type Client,
  client,
  expectError,
  expectIssues,
  LISTENING,
  producerKey,
  type Res,
  type Started,
  startServer,
  until,
} from "./e2e-helpers.js";

const ADMIN = `adm_${randomBytes(12).toString("hex")}`;
const FILED_HOST = `hk_filed_${randomBytes(8).toString("hex")}`;
const RATE = 5;
const CONFIG = {
  partitions: 4,
  adminToken: ADMIN,
  quotaRecountMs: 1000,
  quotas: { bufferedEvents: 1000 },
  tenants: { filed: { hostKeys: [FILED_HOST], quotas: { waitingWaits: 1 } } },
};
const env = { RENDEZVOUS_PREFIX: uniquePrefix("qr"), RENDEZVOUS_SECRET_KEY: randomBytes(32).toString("hex") };

let servers: Started[] = [];
let scheduler: CliProcess;
let admin: Client;
let redis: RedisLike;
let freshKey: string;
const on = (i: number, headers: Record<string, string>): Client => client((servers[i] as Started).url, headers);
const both = [0, 1];

beforeAll(async () => {
  servers = await Promise.all(both.map(() => startServer({ config: CONFIG, role: "api", env })));
  scheduler = spawnCli(
    ["scheduler", "--config", (servers[0] as Started).configFile, "--redis-url", redisUrl(), "--port", "0"],
    env,
  );
  await scheduler.waitFor(LISTENING, 25_000);
  admin = on(0, bearer(ADMIN));
  redis = createRedis(redisUrl());
}, 60_000);

afterAll(async () => {
  const sorted = [...seen].sort((a, b) => a - b);
  process.stdout.write(`limit changes in force after (ms): n=${sorted.length} max=${sorted.at(-1)} all=${sorted}\n`);
  redis?.disconnect();
  if (scheduler) expect((await scheduler.terminate()).code).toBe(0);
  for (const s of servers) expect((await s.proc.terminate()).code).toBe(0);
});

const spec = (runId: string) => ({ runId, position: "p", eventType: "order.paid", correlationId: `c-${runId}` });

/** how long each limit change took to be in force (printed at the end) */
const seen: number[] = [];

/** ms from `t0` until `check` holds (failing after 10 s). */
async function within(t0: number, check: () => Promise<boolean>): Promise<number> {
  await until(async () => (await check()) || undefined, 10_000);
  return Date.now() - t0;
}

/** Until both API processes answer the tenant's usage with `limit` for `quota`. */
async function bothSee(tenant: string, quota: string, limit: number | null, t0 = Date.now()): Promise<number> {
  return within(t0, async () => {
    for (const api of both) {
      const r = await on(api, bearer(ADMIN)).get(`/v1/tenant/usage?tenant=${tenant}`);
      if (r.status !== 200 || r.body.usage.quotas[quota].limit !== limit) return false;
    }
    return true;
  });
}

describe("quotas set through the admin API, two API processes", () => {
  it("refuses names that are not quotas and values a quota cannot take, storing nothing", async () => {
    const before = (await admin.get("/v1/admin/registry")).body.version;
    for (const limits of [
      { waitingWait: 2 },
      { waitingWaits: 1.5 },
      { waitingWaits: -1 },
      { hostRequestsPerSec: 0 },
      { producerEventsPerSec: "5" },
    ]) {
      const error = expectIssues(await admin.post("/v1/admin/tenants", { name: "typo", limits }), "invalid_request");
      expect(error.issues[0].path.slice(0, 2), JSON.stringify(limits)).toEqual(["body", "limits"]);
    }
    const typo = expectIssues(
      await admin.patch("/v1/admin/tenants/filed", { limits: { waitingwaits: 3 } }),
      "invalid_request",
    );
    expect(typo.issues[0].message).toContain("waitingwaits");
    expectIssues(
      await admin.post("/v1/admin/tenants/filed/producers", { id: "p", eventTypes: ["a.*"], limits: { rate: 1 } }),
      "invalid_request",
    );
    expect((await admin.get("/v1/admin/registry")).body.version).toBe(before);
    expectError(await admin.get("/v1/admin/tenants/typo"), 404, "not_found");
  });

  it("a tenant created with waitingWaits 2: the third registration is 429 from either API, nothing stored; raised, it registers within 1 s", async () => {
    const made = await admin.post("/v1/admin/tenants", {
      name: "fresh",
      limits: { waitingWaits: 2, bufferedEvents: null },
    });
    expect(made.status, made.text).toBe(201);
    expect(made.body.tenant.limits).toEqual({ waitingWaits: 2 });
    const key = await admin.post("/v1/admin/tenants/fresh/host-keys", {});
    expect(key.status).toBe(201);
    freshKey = key.body.key as string;
    await bothSee("fresh", "waitingWaits", 2);
    const hosts = both.map((i) => on(i, bearer(freshKey)));
    // the key is known to both processes within 1 s (the registry's bound)
    await within(Date.now(), async () => {
      for (const h of hosts) if ((await h.get("/v1/tenant/usage")).status !== 200) return false;
      return true;
    });
    for (let i = 0; i < 2; i++) expect((await (hosts[i] as Client).post("/v1/waits", spec(`r${i}`))).status).toBe(201);
    for (const h of hosts) {
      const r: Res = await h.post("/v1/waits", spec("r2"));
      const error = expectError(r, 429, "quota_exceeded");
      expect(error).toMatchObject({ quota: "waitingWaits", limit: 2, usage: 2, retryAfter: 1 });
      expect(r.headers.get("retry-after")).toBe("1");
    }
    // nothing stored: not listed
    expect((await (hosts[0] as Client).get("/v1/waits?runId=r2")).body.waits).toEqual([]);
    const usage = await (hosts[1] as Client).get("/v1/tenant/usage");
    expect(usage.body.usage).toEqual({
      tenant: "fresh",
      quotas: {
        waitingWaits: { usage: 2, limit: 2 },
        bufferedEvents: { usage: 0, limit: 1000 },
        hostRequestsPerSec: { limit: null },
        producerEventsPerSec: { limit: null },
      },
    });
    // the usage and the refusals are on each process's /metrics, as for a tenant of the file
    for (const s of servers) {
      const text = await (await fetch(`${s.url}/metrics`)).text();
      expect(text).toMatch(/rendezvous_quota_usage\{quota="waitingWaits",tenant="fresh"\} 2/);
      expect(text).toMatch(/rendezvous_quota_refusals_total\{quota="waitingWaits",tenant="fresh"\} 1/);
    }
    // raised to 4: each process lets a registration through within 1 s of the answer
    const t0 = Date.now();
    expect((await admin.patch("/v1/admin/tenants/fresh", { limits: { waitingWaits: 4 } })).status).toBe(200);
    const took = await Promise.all(
      both.map((i) =>
        within(t0, async () => (await (hosts[i] as Client).post("/v1/waits", spec(`r${2 + i}`))).status === 201),
      ),
    );
    seen.push(...took);
    for (const ms of took) expect(ms).toBeLessThan(1500);
    expectError(await (hosts[0] as Client).post("/v1/waits", spec("r4")), 429, "quota_exceeded");
  });

  it("a hostRequestsPerSec set through the API is one limit over both processes", async () => {
    const patched = await admin.patch("/v1/admin/tenants/fresh", {
      limits: { waitingWaits: 4, hostRequestsPerSec: RATE },
    });
    expect(patched.status).toBe(200);
    seen.push(await bothSee("fresh", "hostRequestsPerSec", RATE));
    // a fresh second for the limiter
    await new Promise((r) => setTimeout(r, 1100));
    const started = Date.now();
    const answers: Array<{ api: number; res: Res }> = [];
    for (let i = 0; i < 30; i++)
      answers.push({ api: i % 2, res: await on(i % 2, bearer(freshKey)).get("/v1/waits?limit=1") });
    const seconds = (Date.now() - started) / 1000;
    const passed = answers.filter((a) => a.res.status === 200).length;
    expect(passed).toBeGreaterThanOrEqual(RATE);
    // per process it would be twice that
    expect(passed).toBeLessThanOrEqual(RATE + Math.ceil(seconds * RATE) + 1);
    for (const api of both) {
      const refused = answers.find((a) => a.api === api && a.res.status === 429);
      expect(refused, `api ${api} refused one`).toBeDefined();
      expect(expectError(refused?.res as Res, 429, "rate_limited")).toMatchObject({
        quota: "hostRequestsPerSec",
        limit: RATE,
      });
    }
    // cleared: the default (none) again, within 1 s
    expect((await admin.patch("/v1/admin/tenants/fresh", { limits: { waitingWaits: 4 } })).status).toBe(200);
    const cleared = await bothSee("fresh", "hostRequestsPerSec", null);
    seen.push(cleared);
    expect(cleared).toBeLessThan(1500);
  });

  it("a producerEventsPerSec set through the API is one limit over both processes; a refused event is not stored", async () => {
    const made = await admin.post("/v1/admin/tenants/fresh/producers", { id: "shop", eventTypes: ["order.*"] });
    expect(made.status, made.text).toBe(201);
    const headers = producerKey("fresh/shop", made.body.key as string);
    const patched = await admin.patch("/v1/admin/tenants/fresh", {
      limits: { waitingWaits: 4, producerEventsPerSec: RATE },
    });
    expect(patched.status).toBe(200);
    seen.push(await bothSee("fresh", "producerEventsPerSec", RATE));
    // the producer is known to both processes (the registry's bound); these events take from the limit
    await within(Date.now(), async () => {
      for (const api of both) {
        const r = await on(api, headers).post("/v1/events", {
          id: `probe-${api}`,
          type: "order.paid",
          correlationId: "p",
        });
        if (r.status !== 202) return false;
      }
      return true;
    });
    await new Promise((r) => setTimeout(r, 1100));
    const started = Date.now();
    const answers: Array<{ api: number; res: Res }> = [];
    for (let i = 0; i < 24; i++) {
      const event = { id: `ev-${i}`, type: "order.paid", correlationId: `o-${i}` };
      answers.push({ api: i % 2, res: await on(i % 2, headers).post("/v1/events", event) });
    }
    const seconds = (Date.now() - started) / 1000;
    const accepted = answers.filter((a) => a.res.status === 202).length;
    expect(accepted).toBeGreaterThanOrEqual(RATE);
    expect(accepted).toBeLessThanOrEqual(RATE + Math.ceil(seconds * RATE) + 1);
    for (const api of both) {
      const refused = answers.find((a) => a.api === api && a.res.status === 429);
      expect(refused, `api ${api} refused one`).toBeDefined();
      expect(expectError(refused?.res as Res, 429, "rate_limited")).toMatchObject({
        quota: "producerEventsPerSec",
        limit: RATE,
      });
    }
    const refusedIndex = answers.findIndex((a) => a.res.status === 429);
    const acceptedIndex = answers.findIndex((a) => a.res.status === 202);
    expect((await on(0, bearer(freshKey)).get(`/v1/events/shop/ev-${refusedIndex}`)).status).toBe(404);
    expect((await on(0, bearer(freshKey)).get(`/v1/events/shop/ev-${acceptedIndex}`)).status).toBe(200);
    expect((await admin.patch("/v1/admin/tenants/fresh", { limits: { waitingWaits: 4 } })).status).toBe(200);
    await bothSee("fresh", "producerEventsPerSec", null);
  });

  it("a config tenant keeps its file quota until the API sets one; the scheduler recounts registry tenants", async () => {
    const filed = both.map((i) => on(i, bearer(FILED_HOST)));
    expect((await (filed[0] as Client).post("/v1/waits", spec("f0"))).status).toBe(201);
    expect(expectError(await (filed[1] as Client).post("/v1/waits", spec("f1")), 429, "quota_exceeded").limit).toBe(1);
    expect((await admin.patch("/v1/admin/tenants/filed", { limits: { waitingWaits: 2 } })).status).toBe(200);
    await bothSee("filed", "waitingWaits", 2);
    expect((await (filed[1] as Client).post("/v1/waits", spec("f1"))).status).toBe(201);

    // a count gone wrong (a crash between a transition and its count update) is set right by the recount
    const counts = `{${env.RENDEZVOUS_PREFIX}:q:fresh}:c`;
    await redis.hset(counts, "w", 50);
    const host = on(0, bearer(freshKey));
    expect(expectError(await host.post("/v1/waits", spec("r9")), 429, "quota_exceeded").usage).toBe(50);
    await until(
      async () => (await host.get("/v1/tenant/usage")).body.usage.quotas.waitingWaits.usage === 4 || undefined,
      8000,
    );
    expect(await redis.hget(counts, "w")).toBe("4");
  });
});
