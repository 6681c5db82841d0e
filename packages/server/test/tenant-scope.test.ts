/**
 * What a credential may see and name, against a real `rendezvous start` process:
 * - the admin naming a tenant the config does not have is refused on every route that
 *   takes `?tenant=`, and nothing is stored.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bearer, client, type Started, startServer } from "./e2e-helpers.js";

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
