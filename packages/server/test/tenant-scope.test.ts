/**
 * What a credential may see and name, against a real `rendezvous start` process (every
 * role in one process, so the console's figures include timeouts and matches):
 * - a host key's console overview holds its own tenant's figures only, never another
 *   tenant's timeouts, resolutions, lateness, events or the shared partition backlog;
 * - the admin naming a tenant the config does not have is refused on every route that
 *   takes `?tenant=`, and nothing is stored;
 * - the console's pages and answers carry a strict CSP and refuse to be framed.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bearer, client, type Json, producerKey, type Started, startServer, until } from "./e2e-helpers.js";

const ADMIN = "adm_scope_test";
const CONFIG = {
  partitions: 4,
  adminToken: ADMIN,
  tenants: {
    acme: {
      hostKeys: ["hk_acme_scope"],
      producers: { billing: { keys: ["pk_acme_scope"], eventTypes: ["job.*"] } },
    },
    globex: { hostKeys: ["hk_globex_scope"] },
  },
};

let server: Started;
beforeAll(async () => {
  server = await startServer({ config: CONFIG });
}, 40_000);
afterAll(async () => {
  if (server) expect((await server.proc.terminate()).code).toBe(0);
});

const UNKNOWN = { path: ["tenant"], message: "unknown tenant" };

describe("console overview for a host key", () => {
  it("shows its own tenant's figures only: another tenant's activity is not in it", async () => {
    const admin = client(server.url, bearer(ADMIN));
    const acme = client(server.url, bearer("hk_acme_scope"));
    const globex = client(server.url, bearer("hk_globex_scope"));
    const producer = client(server.url, producerKey("acme/billing", "pk_acme_scope"));
    const wait = (position: string, correlationId: string, timeoutMs?: number) =>
      acme.post("/v1/waits", { runId: "run-scope", position, eventType: "job.done", correlationId, timeoutMs });

    // acme: a timeout, an event resolution, a delivery, an accepted event and its duplicate
    expect((await wait("t", "c-timeout", 200)).status).toBe(201);
    expect((await wait("e", "c-event")).status).toBe(201);
    expect((await wait("d", "c-deliver")).status).toBe(201);
    const sent = { id: "ev-1", type: "job.done", correlationId: "c-event", payload: {} };
    expect((await producer.post("/v1/events", sent)).status).toBe(202);
    expect((await producer.post("/v1/events", sent)).body).toMatchObject({ status: "duplicate" });
    expect((await acme.post("/v1/deliver", { eventType: "job.done", correlationId: "c-deliver" })).status).toBe(200);

    const own: Json = await until(async () => {
      const r = await acme.get("/console/api/overview");
      const t = r.body.totals;
      return t?.timeoutsFired === 1 && t.resolutions.event === 1 ? r.body : undefined;
    });
    expect(own.totals).toMatchObject({
      accepted: 1,
      duplicate: 1,
      rejected: null,
      rejectedByReason: null,
      timeoutsFired: 1,
      resolutions: { timeout: 1, event: 1, deliver: 1 },
    });
    expect(own.totals.latenessMeanMs).toBeGreaterThanOrEqual(0);

    const other = await globex.get("/console/api/overview");
    expect(other.status).toBe(200);
    expect(other.body.tenants).toEqual([{ tenant: "globex", waiting: 0, settled: 0 }]);
    expect(other.body.totals).toEqual({
      accepted: 0,
      duplicate: 0,
      rejected: null,
      rejectedByReason: null,
      timeoutsFired: 0,
      latenessMeanMs: null,
      resolutions: {},
    });
    expect(other.body.overdue).toBeNull();
    expect(other.body.partitions).toBeNull();
    expect(other.body.series.length).toBeGreaterThan(0);
    for (const point of other.body.series) {
      expect(point).toMatchObject({ accepted: 0, duplicate: 0, rejected: null, latenessMs: null });
    }
    // what every tenant shares (the partitions' backlog, overdue waits) is the admin's
    expect(own.partitions).toBeNull();
    expect(own.overdue).toBeNull();

    // the admin still sees the global figures, and the shared backlog
    const all = await admin.get("/console/api/overview");
    expect(all.body.totals).toMatchObject({ accepted: 1, timeoutsFired: 1, resolutions: { timeout: 1, event: 1 } });
    expect(all.body.partitions).toHaveLength(4);
    expect(all.body.overdue).toBe(0);
    // and one tenant's, when it names it
    const named = await admin.get("/console/api/overview?tenant=globex");
    expect(named.body.totals).toMatchObject({ accepted: 0, timeoutsFired: 0, latenessMeanMs: null, resolutions: {} });

    // /metrics: the resolution and lateness series carry the tenant
    const metrics = await client(server.url).get("/metrics");
    expect(metrics.text).toMatch(/rendezvous_resolutions_total\{kind="timeout",tenant="acme"\} 1/);
    expect(metrics.text).toMatch(/rendezvous_timeout_lateness_seconds_count\{tenant="acme"\} 1/);
  });
});

describe("the admin naming a tenant the config does not have", () => {
  it("is refused with invalid_request on every route that takes ?tenant=, and nothing is stored", async () => {
    const admin = client(server.url, bearer(ADMIN));
    const spec = { runId: "run-ghost", position: "p", eventType: "job.done", correlationId: "c-ghost" };
    const answers = {
      register: await admin.post("/v1/waits?tenant=nosuchtenant", spec),
      list: await admin.get("/v1/waits?tenant=nosuchtenant"),
      deliver: await admin.post("/v1/deliver?tenant=nosuchtenant", { eventType: "job.done", all: true }),
      eventRead: await admin.get("/v1/events/billing/ev-1?tenant=nosuchtenant"),
      inherited: await admin.get("/v1/waits?tenant=constructor"),
      consoleOverview: await admin.get("/console/api/overview?tenant=nosuchtenant"),
      consoleWaits: await admin.get("/console/api/waits?tenant=nosuchtenant"),
      consoleRejections: await admin.get("/console/api/rejections?tenant=nosuchtenant"),
    };
    for (const [route, r] of Object.entries(answers)) {
      expect({ route, status: r.status, code: r.body.error?.code, issues: r.body.error?.issues }).toEqual({
        route,
        status: 400,
        code: "invalid_request",
        issues: [UNKNOWN],
      });
    }
    // a configured tenant still works for the admin, and the ghost registration left nothing
    const listed = await admin.get("/v1/waits?tenant=acme&runId=run-ghost");
    expect(listed.status).toBe(200);
    expect(listed.body.waits).toEqual([]);
    expect((await admin.post("/v1/waits?tenant=globex", spec)).status).toBe(201);
    // a host key naming a tenant not its own still answers 404, known or not
    const acme = client(server.url, bearer("hk_acme_scope"));
    expect((await acme.get("/v1/waits?tenant=nosuchtenant")).status).toBe(404);
    expect((await acme.get("/v1/waits?tenant=globex")).status).toBe(404);
  });
});

describe("console security headers", () => {
  it("every console answer carries a strict CSP, no framing, nosniff and no referrer; the API routes are unchanged", async () => {
    const anonymous = client(server.url);
    const page = await anonymous.get("/console/waits/w1.abc");
    expect(page.status).toBe(200);
    const script = /src="(\/console\/assets\/[^"]+\.js)"/.exec(page.text)?.[1];
    const style = /href="(\/console\/assets\/[^"]+\.css)"/.exec(page.text)?.[1];
    expect(script && style).toBeTruthy();
    const answers = [
      page,
      await anonymous.get("/console"),
      await anonymous.get(script as string),
      await anonymous.get(style as string),
      await client(server.url, bearer(ADMIN)).get("/console/api/session"),
      await anonymous.get("/console/api/session"), // 401
    ];
    for (const r of answers) {
      const csp = r.headers.get("content-security-policy") ?? "";
      expect(csp).toContain("default-src 'none'");
      expect(csp).toContain("script-src 'self'");
      expect(csp).toContain("style-src 'self'");
      expect(csp).toContain("connect-src 'self'");
      expect(csp).toContain("frame-ancestors 'none'");
      expect(csp).not.toContain("unsafe");
      expect(r.headers.get("x-frame-options")).toBe("DENY");
      expect(r.headers.get("x-content-type-options")).toBe("nosniff");
      expect(r.headers.get("referrer-policy")).toBe("no-referrer");
      expect(r.headers.get("strict-transport-security")).toBeNull();
    }
    expect(answers[5]?.status).toBe(401);
    const api = await client(server.url, bearer("hk_acme_scope")).get("/v1/waits");
    expect(api.status).toBe(200);
    expect(api.headers.get("content-security-policy")).toBeNull();
  });
});
