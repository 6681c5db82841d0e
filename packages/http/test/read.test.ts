import { parseConfig } from "@rendezvous/engine";
import { describe, expect, it } from "vitest";
import { authenticateHost, indexCredentials, readTenant } from "../src/index.js";
import { CONFIG, ev, makeApp, publish } from "./helpers.js";

type App = Awaited<ReturnType<typeof makeApp>>;

function read(h: App, url: string, token?: string) {
  return h.app.inject({ method: "GET", url, headers: token ? { authorization: `Bearer ${token}` } : {} });
}

describe("GET /v1/events/{producer}/{eventId}", () => {
  it("a host key reads its tenant's event with its status, streamId and ISO times", async () => {
    const h = await makeApp();
    const accepted = (await publish(h, ev("e1"))).json().event;
    const res = await read(h, "/v1/events/billing/e1", "hk_acme");
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({
      event: {
        id: "e1",
        tenant: "acme",
        producer: "billing",
        type: "job.done",
        correlationId: "job-e1",
        occurredAt: null,
        acceptedAt: accepted.acceptedAt,
        streamId: accepted.streamId,
        status: "pending",
        matchedWaits: [],
        lateFor: [],
      },
    });
  });

  it("ids with reserved characters and ids of 200 characters are read back when URL-encoded", async () => {
    const h = await makeApp();
    for (const id of ["order/42?x=1#frag é", "x".repeat(200), "é".repeat(200), "a b+c%d"]) {
      expect((await publish(h, ev(id))).statusCode).toBe(202);
      const res = await read(h, `/v1/events/billing/${encodeURIComponent(id)}`, "hk_acme");
      expect(res.statusCode, id).toBe(200);
      expect(res.json().event.id).toBe(id);
    }
  });

  it("another tenant's event, an unknown or a malformed id all answer 404 not_found alike", async () => {
    const h = await makeApp();
    await publish(h, ev("e1"));
    await publish(h, ev("g1"), { producer: "globex/billing", key: "pk_globex" });
    for (const [url, token] of [
      ["/v1/events/billing/g1", "hk_acme"], // globex's event, acme's key
      ["/v1/events/billing/e1", "hk_globex"],
      ["/v1/events/billing/nope", "hk_acme"],
      ["/v1/events/nobody/e1", "hk_acme"],
      [`/v1/events/billing/${"x".repeat(201)}`, "hk_acme"],
      ["/v1/events/bad%20producer/e1", "hk_acme"],
      ["/v1/events/billing/e1?tenant=globex", "hk_acme"], // a host cannot name another tenant
      ["/v1/events/billing/%E0%A4%A", "hk_acme"], // not decodable (the server's frameworkErrors)
      ["/v1/events/bi%ZZ/e1", "hk_acme"],
    ] as const) {
      const res = await read(h, url, token);
      expect(res.statusCode, url).toBe(404);
      expect(res.json(), url).toEqual({ error: { code: "not_found", message: "not found" } });
    }
    expect((await read(h, "/v1/events/billing/e1?tenant=acme", "hk_acme")).statusCode).toBe(200);
  });

  it("the admin token reads any tenant named by ?tenant=; without it 400 invalid_request", async () => {
    const h = await makeApp();
    await publish(h, ev("g1"), { producer: "globex/billing", key: "pk_globex" });
    const res = await read(h, "/v1/events/billing/g1?tenant=globex", "adm_test_token");
    expect(res.statusCode).toBe(200);
    expect(res.json().event).toMatchObject({ id: "g1", tenant: "globex" });
    expect((await read(h, "/v1/events/billing/g1?tenant=acme", "adm_test_token")).statusCode).toBe(404);
    const missing = await read(h, "/v1/events/billing/g1", "adm_test_token");
    expect(missing.statusCode).toBe(400);
    expect(missing.json().error).toMatchObject({ code: "invalid_request", issues: [{ path: ["tenant"] }] });
    const twice = await read(h, "/v1/events/billing/g1?tenant=a&tenant=b", "adm_test_token");
    expect(twice.statusCode).toBe(400);
  });

  it("401 without a host credential: none, a producer key, a wrong token", async () => {
    const h = await makeApp();
    await publish(h, ev("e1"));
    for (const token of [undefined, "pk_billing", "hk_nope", "adm_wrong"]) {
      const res = await read(h, "/v1/events/billing/e1", token);
      expect(res.statusCode, String(token)).toBe(401);
      expect(res.json()).toEqual({ error: { code: "unauthorized", message: "unauthorized" } });
    }
  });

  it("host auth is reusable on its own: host key → tenant, admin token → admin", () => {
    const index = indexCredentials(parseConfig(CONFIG));
    expect(authenticateHost(index, { authorization: "Bearer hk_globex" })).toEqual({ kind: "host", tenant: "globex" });
    expect(authenticateHost(index, { authorization: "bearer adm_test_token" })).toEqual({ kind: "admin" });
    expect(() => authenticateHost(index, { authorization: "Bearer pk_billing" })).toThrow("unauthorized");
    const tenants = parseConfig(CONFIG).tenants;
    expect(readTenant({ kind: "host", tenant: "acme" }, undefined, tenants)).toBe("acme");
    expect(readTenant({ kind: "admin" }, "globex", tenants)).toBe("globex");
    expect(() => readTenant({ kind: "admin" }, undefined, tenants)).toThrow();
    // only configured tenants, and no inherited property names
    for (const unknown of ["nosuchtenant", "constructor", "__proto__"]) {
      expect(() => readTenant({ kind: "admin" }, unknown, tenants), unknown).toThrow("no such tenant");
    }
    // no admin token configured: nothing authenticates as admin
    const noAdmin = indexCredentials(parseConfig({ ...CONFIG, adminToken: undefined }));
    expect(() => authenticateHost(noAdmin, { authorization: "Bearer adm_test_token" })).toThrow("unauthorized");
  });
});
