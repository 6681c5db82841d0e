/**
 * The console's JSON endpoints through `buildApp` + `inject` on the run's private
 * Redis: wait counts per tenant from the indexes, the cross-tenant listing with one
 * cursor (every wait exactly once), tenant confinement of host keys, recent
 * refusals, the continuation job, Server-Timing, the overview's HTTP error rate and queue
 * depths, and the SPA fallback.
 */

import { buildApp } from "@rendezvous/http";
import { makeResources } from "@rendezvous/testkit";
import { Queue } from "bullmq";
import type { FastifyInstance } from "fastify";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ensureConsoleBuilt } from "./console-browser.js";

const ADMIN = "adm_console_api";
const HK = { acme: "hk_acme_capi", globex: "hk_globex_capi" };
const auth = (token: string) => ({ authorization: `Bearer ${token}` });

let app: FastifyInstance;
let res: ReturnType<typeof makeResources>;

beforeEach(async () => {
  ensureConsoleBuilt();
  res = makeResources({
    adminToken: ADMIN,
    tenants: {
      acme: { hostKeys: [HK.acme], producers: { billing: { keys: ["pk_capi"], eventTypes: ["order.*"] } } },
      globex: { hostKeys: [HK.globex] },
      initech: { hostKeys: ["hk_initech_capi"] },
    },
    eventTypes: { "order.paid": { payloadSchema: { type: "object", required: ["amount"] } } },
  });
  app = await buildApp({ res, roles: ["api"], running: () => true, api: true, queueNames: [] });
  await res.redis.ping(); // connected: the API answers 503 while Redis is not ready
});

afterEach(async () => {
  await app.close();
});

async function register(tenant: string, n: number, eventType = "order.paid"): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < n; i++) {
    const { wait } = await res.store.register(tenant, {
      runId: `run-${tenant}-${i}`,
      position: "p#1",
      eventType,
      correlationId: `c-${tenant}-${i}`,
      timeoutMs: 600_000,
    });
    ids.push(wait.id);
  }
  return ids;
}

const get = async (url: string, token = ADMIN) => {
  const r = await app.inject({ method: "GET", url, headers: auth(token) });
  return { status: r.statusCode, body: r.json(), headers: r.headers };
};

describe("console JSON endpoints", () => {
  it("counts waits per tenant from the indexes", async () => {
    const acme = await register("acme", 5);
    await register("globex", 2);
    await res.store.cancel(null, acme[0] as string);
    await res.store.cancel(null, acme[1] as string);
    const r = await get("/console/api/overview");
    expect(r.status).toBe(200);
    expect(r.body.tenants).toEqual([
      { tenant: "acme", waiting: 3, settled: 2 },
      { tenant: "globex", waiting: 2, settled: 0 },
      { tenant: "initech", waiting: 0, settled: 0 },
    ]);
    expect(r.body.partitions).toHaveLength(4);
    expect(r.body.overdue).toBe(0);
    expect(r.headers["server-timing"]).toMatch(/^app;dur=\d+(\.\d+)?$/);
    // a host key: its tenant only, and no cross-tenant refusal counts
    const h = await get("/console/api/overview", HK.globex);
    expect(h.body.tenants).toEqual([{ tenant: "globex", waiting: 2, settled: 0 }]);
    expect(h.body.totals.rejected).toBeNull();
    expect(h.body.overdue).toBeNull();
  });

  it("shows the HTTP error rate and the queue depths to the admin; a host key its own continuation queues only", async () => {
    await app.close();
    const queueNames = ["timeouts", "webhooks", "continuations.acme", "continuations.globex", "continuations.initech"];
    app = await buildApp({ res, roles: ["api"], running: () => true, api: true, queueNames });
    const connection = res.connect("test");
    const queue = new Queue("continuations.acme", { connection, prefix: res.queuePrefix });
    try {
      await queue.add("continuation", { id: "w-1" }, { jobId: "w-1" });
      await queue.add("continuation", { id: "w-2" }, { jobId: "w-2", delay: 600_000 });
      // three 4xx answers: two unknown waits and a missing credential
      for (const url of ["/v1/waits/nope-1", "/v1/waits/nope-2"]) {
        expect((await app.inject({ method: "GET", url, headers: auth(HK.acme) })).statusCode).toBe(404);
      }
      expect((await app.inject({ method: "GET", url: "/console/api/overview" })).statusCode).toBe(401);

      const r = await get("/console/api/overview");
      expect(r.status).toBe(200);
      const http = r.body.http;
      expect(http.totals.clientErrors).toBe(3);
      expect(http.totals.serverErrors).toBe(0);
      expect(http.totals.requests).toBeGreaterThanOrEqual(3);
      expect(http.recent.clientErrorsPerSec).toBeGreaterThan(0);
      expect(http.recent.clientErrorShare).toBeGreaterThan(0);
      expect(http.recent.clientErrorShare).toBeLessThanOrEqual(1);
      expect(http.recent.serverErrorShare).toBe(0);
      const queues = r.body.queues;
      expect(queues.continuations).toMatchObject({ queues: 3, waiting: 1, active: 0, delayed: 1, failed: 0 });
      expect(queues.continuations.oldestWaitingAgeMs).toBeGreaterThanOrEqual(0);
      expect(queues.continuations.oldestWaitingAgeMs).toBeLessThan(60_000);
      expect(queues.webhooks).toEqual({ waiting: 0, active: 0, delayed: 0, failed: 0, oldestWaitingAgeMs: null });
      expect(queues.timeouts).toEqual({ waiting: 0, active: 0, delayed: 0, failed: 0, oldestWaitingAgeMs: null });
      expect(queues.busiest).toEqual([{ queue: "continuations.acme", ...queues.continuations, queues: undefined }]);

      // a host key: no process-wide figures, its own tenant's queues only
      const h = await get("/console/api/overview", HK.globex);
      expect(h.body.http).toBeNull();
      expect(h.body.queues).toEqual({
        continuations: { queues: 1, waiting: 0, active: 0, delayed: 0, failed: 0, oldestWaitingAgeMs: null },
        webhooks: null,
        timeouts: null,
        busiest: [],
      });
      // the admin naming a tenant: that tenant's queues, not the shared ones
      const a = await get("/console/api/overview?tenant=acme");
      expect(a.body.queues).toMatchObject({ continuations: { queues: 1, waiting: 1 }, webhooks: null, timeouts: null });
    } finally {
      await queue.close();
      connection.disconnect();
    }
  });

  it("lists every tenant's waits once through one cursor, a page at a time", async () => {
    const all = [...(await register("acme", 7)), ...(await register("globex", 4)), ...(await register("initech", 3))];
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const r = await get(`/console/api/waits?limit=4${cursor ? `&cursor=${cursor}` : ""}`);
      expect(r.status).toBe(200);
      expect(r.body.waits.length).toBeLessThanOrEqual(4);
      seen.push(...r.body.waits.map((w: { id: string }) => w.id));
      cursor = r.body.nextCursor;
      pages++;
    } while (cursor && pages < 20);
    expect(seen.sort()).toEqual([...all].sort());
    expect(pages).toBeGreaterThanOrEqual(4);
    // filters: one tenant, a state
    const g = await get("/console/api/waits?tenant=globex&state=waiting");
    expect(g.body.waits.map((w: { tenant: string }) => w.tenant)).toEqual(["globex", "globex", "globex", "globex"]);
    expect((await get("/console/api/waits?tenant=globex&state=cancelled")).body.waits).toEqual([]);
    expect((await get("/console/api/waits?cursor=not-a-cursor")).body.error.code).toBe("invalid_request");
  });

  it("confines a host key to its tenant", async () => {
    const [theirs] = await register("acme", 1);
    const [mine] = await register("globex", 1);
    const list = await get("/console/api/waits", HK.globex);
    expect(list.body.waits.map((w: { id: string }) => w.id)).toEqual([mine]);
    expect((await get("/console/api/waits?tenant=acme", HK.globex)).status).toBe(404);
    expect((await get(`/console/api/waits/${theirs}/job`, HK.globex)).status).toBe(404);
    const job = await get(`/console/api/waits/${mine}/job`, HK.globex);
    expect(job.body).toEqual({ queue: "continuations.globex", jobId: mine, job: null, board: null });
    expect((await get("/console/api/session", HK.globex)).body).toEqual({
      identity: { kind: "host", tenant: "globex" },
      tenants: ["globex"],
      board: null,
    });
    const anonymous = await app.inject({ method: "GET", url: "/console/api/waits" });
    expect(anonymous.statusCode).toBe(401);
    expect(anonymous.json().error.code).toBe("unauthorized");
  });

  it("shows recent refusals with their reasons, newest first, per tenant", async () => {
    const send = (id: string, payload: object) =>
      app.inject({
        method: "POST",
        url: "/v1/events",
        headers: { ...auth("pk_capi"), "rendezvous-producer": "acme/billing" },
        payload: { id, type: "order.paid", correlationId: `c-${id}`, payload },
      });
    expect((await send("bad-1", {})).statusCode).toBe(400);
    await new Promise((r) => setTimeout(r, 5));
    expect((await send("bad-2", { nope: true })).statusCode).toBe(400);
    const r = await get("/console/api/rejections");
    expect(r.body.rejections.map((x: { eventId: string }) => x.eventId)).toEqual(["bad-2", "bad-1"]);
    expect(r.body.rejections[0]).toMatchObject({
      tenant: "acme",
      eventType: "order.paid",
      correlationId: "c-bad-2",
      producer: "billing",
      reason: "invalid_event",
    });
    expect((await get("/console/api/rejections?tenant=globex")).body.rejections).toEqual([]);
    expect((await get("/console/api/rejections", HK.globex)).body.rejections).toEqual([]);
    expect((await get("/console/api/rejections", HK.acme)).body.rejections).toHaveLength(2);
  });

  it("serves the console page for any path below /console, and JSON 404s under /console/api", async () => {
    for (const url of ["/console", "/console/", "/console/waits/w1.abc"]) {
      const r = await app.inject({ method: "GET", url });
      expect(r.statusCode, url).toBe(200);
      expect(r.headers["content-type"]).toContain("text/html");
      expect(r.body).toContain('<div id="root">');
    }
    const missing = await get("/console/api/nothing-here");
    expect(missing.status).toBe(404);
    expect(missing.body.error.code).toBe("not_found");
  });
});
