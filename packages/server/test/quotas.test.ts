/**
 * Quotas across processes (docs/api.md, Quotas): two `rendezvous api` processes on one
 * Redis and prefix. A tenant at a rate gets 429 from both (the limit is global, not ×2);
 * over its waiting-waits quota a registration is refused from both and nothing is
 * stored; another tenant is unaffected.
 */
import { uniquePrefix } from "@rendezvous/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  bearer,
  type Client,
  client,
  expectError,
  producerKey,
  type Res,
  type Started,
  startServer,
} from "./e2e-helpers.js";

const ADMIN = "adm_quota_e2e";
const RATE = 5;
const CONFIG = {
  partitions: 4,
  adminToken: ADMIN,
  tenants: {
    acme: {
      hostKeys: ["hk_acme_q"],
      producers: { billing: { keys: ["pk_billing_q"], eventTypes: ["order.*"] } },
      quotas: { waitingWaits: 3, producerEventsPerSec: RATE },
    },
    rated: { hostKeys: ["hk_rated_q"], quotas: { hostRequestsPerSec: RATE } },
    other: {
      hostKeys: ["hk_other_q"],
      producers: { svc: { keys: ["pk_svc_q"], eventTypes: ["order.*"] } },
    },
  },
};

let servers: Started[] = [];
const on = (i: number, headers: Record<string, string>): Client => client((servers[i] as Started).url, headers);

beforeAll(async () => {
  const prefix = uniquePrefix("q");
  servers = await Promise.all(
    [0, 1].map(() => startServer({ config: CONFIG, role: "api", env: { RENDEZVOUS_PREFIX: prefix } })),
  );
}, 60_000);

afterAll(async () => {
  for (const s of servers) expect((await s.proc.terminate()).code).toBe(0);
});

const spec = (runId: string, extra: Record<string, unknown> = {}) => ({
  runId,
  position: "p",
  eventType: "order.paid",
  correlationId: `c-${runId}`,
  ...extra,
});

/** Fires `n` requests alternately at the two processes, as fast as they answer; their statuses and time taken. */
async function alternate(n: number, send: (api: number, i: number) => Promise<Res>) {
  const started = Date.now();
  const answers: Array<{ api: number; res: Res }> = [];
  for (let i = 0; i < n; i++) answers.push({ api: i % 2, res: await send(i % 2, i) });
  return { answers, seconds: (Date.now() - started) / 1000 };
}

describe("quotas with two API processes", () => {
  it("hostRequestsPerSec is one limit over both processes: 429 rate_limited with Retry-After from each", async () => {
    const { answers, seconds } = await alternate(30, (api) => on(api, bearer("hk_rated_q")).get("/v1/waits?limit=1"));
    const passed = answers.filter((a) => a.res.status === 200).length;
    // one second's worth, plus what refills while the requests run: per process it would be twice that
    expect(passed).toBeGreaterThanOrEqual(RATE);
    expect(passed).toBeLessThanOrEqual(RATE + Math.ceil(seconds * RATE) + 1);
    for (const api of [0, 1]) {
      const refused = answers.find((a) => a.api === api && a.res.status === 429);
      expect(refused, `api ${api} refused one`).toBeDefined();
      const error = expectError(refused?.res as Res, 429, "rate_limited");
      expect(error).toMatchObject({ quota: "hostRequestsPerSec", limit: RATE });
      expect(Number(refused?.res.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
    }
    // another tenant is not limited
    for (let i = 0; i < 12; i++)
      expect((await on(i % 2, bearer("hk_other_q")).get("/v1/waits?limit=1")).status).toBe(200);
  });

  it("producerEventsPerSec is one limit over both processes; a refused event is not stored", async () => {
    const { answers, seconds } = await alternate(24, (api, i) =>
      on(api, producerKey("acme/billing", "pk_billing_q")).post("/v1/events", {
        id: `ev-${i}`,
        type: "order.paid",
        correlationId: `o-${i}`,
      }),
    );
    const accepted = answers.filter((a) => a.res.status === 202);
    expect(accepted.length).toBeGreaterThanOrEqual(RATE);
    expect(accepted.length).toBeLessThanOrEqual(RATE + Math.ceil(seconds * RATE) + 1);
    for (const api of [0, 1]) {
      const refused = answers.find((a) => a.api === api && a.res.status === 429);
      expect(refused, `api ${api} refused one`).toBeDefined();
      expect(expectError(refused?.res as Res, 429, "rate_limited").quota).toBe("producerEventsPerSec");
    }
    const refusedIndex = answers.findIndex((a) => a.res.status === 429);
    const read = await on(0, bearer("hk_acme_q")).get(`/v1/events/billing/ev-${refusedIndex}`);
    expect(read.status).toBe(404);
    // another tenant's producer is not limited
    for (let i = 0; i < 12; i++) {
      const r = await on(i % 2, producerKey("other/svc", "pk_svc_q")).post("/v1/events", {
        id: `o-${i}`,
        type: "order.paid",
        correlationId: `o-${i}`,
      });
      expect(r.status).toBe(202);
    }
  });

  it("over waitingWaits a registration is refused by both processes, nothing stored; the usage shows it; another tenant registers", async () => {
    const acme = [0, 1].map((i) => on(i, bearer("hk_acme_q")));
    const [a0, a1] = acme as [Client, Client];
    for (let i = 0; i < 3; i++) expect((await (i % 2 ? a1 : a0).post("/v1/waits", spec(`r${i}`))).status).toBe(201);
    for (const c of acme) {
      const r = await c.post("/v1/waits", spec("r3"));
      const error = expectError(r, 429, "quota_exceeded");
      expect(error).toMatchObject({ quota: "waitingWaits", limit: 3, usage: 3, retryAfter: 1 });
      expect(r.headers.get("retry-after")).toBe("1");
    }
    // nothing stored: not listed, and its run position was not claimed
    expect((await a0.get("/v1/waits?runId=r3")).body.waits).toEqual([]);
    const usage = await a1.get("/v1/tenant/usage");
    expect(usage.status).toBe(200);
    expect(usage.body.usage).toMatchObject({
      tenant: "acme",
      quotas: { waitingWaits: { usage: 3, limit: 3 }, producerEventsPerSec: { limit: RATE } },
    });
    const admin = await on(0, bearer(ADMIN)).get("/v1/tenant/usage?tenant=acme");
    expect(admin.body.usage.quotas.waitingWaits).toEqual({ usage: 3, limit: 3 });
    // another tenant is unaffected
    const other = on(1, bearer("hk_other_q"));
    for (let i = 0; i < 5; i++) expect((await other.post("/v1/waits", spec(`x${i}`))).status).toBe(201);
    // one wait settles: there is room again, and r3 registers with another definition (never claimed)
    const first = (await a0.get("/v1/waits?runId=r0")).body.waits[0];
    expect((await a1.delete(`/v1/waits/${first.id}`)).status).toBe(200);
    expect((await a1.post("/v1/waits", spec("r3", { correlationId: "another" }))).status).toBe(201);
    // the refusals are on each process's /metrics
    for (const s of servers) {
      const text = await (await fetch(`${s.url}/metrics`)).text();
      expect(text).toMatch(/rendezvous_quota_refusals_total\{quota="waitingWaits",tenant="acme"\} 1/);
      expect(text).toMatch(/rendezvous_quota_usage\{quota="waitingWaits",tenant="acme"\} 3/);
    }
  });
});
