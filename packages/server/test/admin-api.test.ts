/**
 * The admin routes on a real `rendezvous start` (docs/api.md, Admin): what they refuse
 * (credentials, bodies, unknown names), event-type versions taking effect on ingest,
 * producer changes and secret rotation, tenant deletion with `force`, last-use marks,
 * and answers that never carry a secret.
 */
import { createHmac, randomBytes } from "node:crypto";
import { createServer } from "node:http";
import { spawnCli } from "@rendezvous/testkit";
import { Validator } from "@seriousme/openapi-schema-validator";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  bearer,
  type Client,
  client,
  expectError,
  expectIssues,
  expectTimes,
  producerKey,
  request,
  type Started,
  sign,
  startServer,
  until,
} from "./e2e-helpers.js";

const ADMIN = `adm_${randomBytes(12).toString("hex")}`;
const HOST = `hk_${randomBytes(12).toString("hex")}`;
let server: Started;
let admin: Client;
const run = Date.now().toString(36);

beforeAll(async () => {
  server = await startServer({
    config: { adminToken: ADMIN, tenants: { acme: { hostKeys: [HOST], producers: {} } } },
    env: { RENDEZVOUS_SECRET_KEY: randomBytes(32).toString("base64") },
  });
  admin = client(server.url, bearer(ADMIN));
}, 40_000);

afterAll(async () => {
  if (server) expect((await server.proc.terminate()).code).toBe(0);
});

/** Polls until `check` holds, for at most 1 s: the registry's propagation bound. */
const soon = (check: () => Promise<boolean>) => until(async () => (await check()) || undefined, 1000);

describe("admin routes", () => {
  it("are in the OpenAPI document the server serves, valid, with the admin token as their security", async () => {
    const doc = (await request(server.url, "GET", "/openapi.json")).body;
    const result = await new Validator().validate(structuredClone(doc));
    expect(result.errors ?? [], JSON.stringify(result.errors)).toEqual([]);
    const ops: Array<{ operationId: string; security: unknown }> = [];
    for (const [path, item] of Object.entries(
      doc.paths as Record<string, Record<string, { operationId: string; security: unknown }>>,
    )) {
      if (path.startsWith("/v1/admin/")) ops.push(...Object.values(item));
    }
    expect(ops.map((o) => o.operationId)).toEqual(
      expect.arrayContaining([
        "createTenant",
        "rotateHostKey",
        "createProducer",
        "createCredential",
        "putEventType",
        "listAudit",
      ]),
    );
    for (const op of ops) expect(op.security, op.operationId).toEqual([{ adminToken: [] }]);
  });

  it("need the admin token: none, a host key or a wrong token is 401", async () => {
    for (const headers of [{}, bearer(HOST), bearer(`${ADMIN}x`)]) {
      expectError(await client(server.url, headers).get("/v1/admin/tenants"), 401, "unauthorized");
      expectError(await client(server.url, headers).post("/v1/admin/tenants", { name: "x" }), 401, "unauthorized");
    }
  });

  it("refuse bad bodies with issues and unknown names with 404, storing nothing", async () => {
    const before = (await admin.get("/v1/admin/registry")).body.version;
    expectIssues(await admin.post("/v1/admin/tenants", { name: "bad name!" }), "invalid_request");
    expectIssues(await admin.post("/v1/admin/tenants", { name: "ok", extra: 1 }), "invalid_request");
    expectIssues(await admin.post("/v1/admin/tenants/acme/producers", { id: "p", eventTypes: [] }), "invalid_request");
    expectIssues(
      await admin.post("/v1/admin/tenants/acme/host-keys/x/rotate", { overlapSeconds: -1 }),
      "invalid_request",
    );
    expectError(await admin.post("/v1/admin/tenants/nope/host-keys", {}), 404, "not_found");
    expectError(await admin.get("/v1/admin/tenants/nope"), 404, "not_found");
    expectError(await admin.get("/v1/admin/tenants/acme/producers/nope"), 404, "not_found");
    expectError(await admin.delete("/v1/admin/tenants/acme/host-keys/hk_nope"), 404, "not_found");
    expectError(await admin.get("/v1/admin/event-types/nope.nope"), 404, "not_found");
    const bad = expectIssues(
      await request(server.url, "PUT", "/v1/admin/event-types/x.y", {
        headers: bearer(ADMIN),
        json: { payloadSchema: { type: "no-such-type" } },
      }),
      "invalid_request",
    );
    expect(bad.issues[0].path).toEqual(["payloadSchema"]);
    expect((await admin.get("/v1/admin/registry")).body.version).toBe(before);
  });

  it("event types are versioned; ingest follows the newest version within 1 s; a deleted type takes any payload", async () => {
    const put = (body: unknown) =>
      request(server.url, "PUT", `/v1/admin/event-types/pay.${run}`, { headers: bearer(ADMIN), json: body });
    const v1 = await put({ payloadSchema: { type: "object", required: ["amount"] } });
    expect(v1.status, v1.text).toBe(201);
    expect(v1.body.eventType).toMatchObject({ type: `pay.${run}`, version: 1 });
    expect((await put({ payloadSchema: { type: "object", required: ["amount"] } })).body.eventType.version).toBe(1);
    const p = await admin.post("/v1/admin/tenants/acme/producers", { id: `pay-${run}`, eventTypes: ["pay.*"] });
    expect(p.status, p.text).toBe(201);
    const producer = client(server.url, producerKey(`acme/pay-${run}`, p.body.key));
    let n = 0;
    const send = (payload: unknown) =>
      producer.post("/v1/events", { id: `e-${run}-${n++}`, type: `pay.${run}`, correlationId: "c", payload });
    await soon(async () => (await send({ amount: 1 })).status === 202);
    expectError(await send({ currency: "EUR" }), 400, "invalid_event");

    const v2 = await put({ payloadSchema: { type: "object", required: ["currency"] } });
    expect(v2.status, v2.text).toBe(200);
    expect(v2.body.eventType.version).toBe(2);
    expect(v2.body.eventType.versions.map((v: { version: number }) => v.version)).toEqual([1, 2]);
    expectTimes(v2.body);
    await soon(async () => (await send({ currency: "EUR" })).status === 202);
    expectError(await send({ amount: 1 }), 400, "invalid_event");

    expect((await admin.delete(`/v1/admin/event-types/pay.${run}`)).status).toBe(200);
    await soon(async () => (await send({ anything: true })).status === 202);
  });

  it("a producer's types change at run time, and a rotated HMAC secret works until its overlap ends", async () => {
    const id = `sig-${run}`;
    const p = await admin.post("/v1/admin/tenants/acme/producers", {
      id,
      eventTypes: ["a.*"],
      credentials: ["secret"],
    });
    expect(p.status, p.text).toBe(201);
    expect(p.body.key).toBeUndefined();
    const first = p.body.secret as string;
    let n = 0;
    const signed = (secret: string, type = "a.x") => {
      const raw = JSON.stringify({ id: `s-${run}-${n++}`, type, correlationId: "c" });
      return request(server.url, "POST", "/v1/events", {
        raw,
        headers: {
          "content-type": "application/json",
          "rendezvous-producer": `acme/${id}`,
          "rendezvous-signature": sign(secret, raw),
        },
      });
    };
    await soon(async () => (await signed(first)).status === 202);
    expectError(await signed(first, "b.x"), 403, "forbidden_event_type");
    expect((await admin.patch(`/v1/admin/tenants/acme/producers/${id}`, { eventTypes: ["b.*"] })).status).toBe(200);
    await soon(async () => (await signed(first, "b.x")).status === 202);

    const r = await admin.post(`/v1/admin/tenants/acme/producers/${id}/credentials`, {
      kind: "secret",
      overlapSeconds: 1,
    });
    expect(r.status, r.text).toBe(201);
    const second = r.body.value as string;
    expect(r.body.producer.secrets).toHaveLength(2);
    await soon(async () => (await signed(second, "b.x")).status === 202);
    expect((await signed(first, "b.x")).status).toBe(202);
    const ends = Date.parse(
      r.body.producer.secrets.find((s: { id: string }) => s.id !== r.body.credential.id).expiresAt,
    );
    await new Promise((res) => setTimeout(res, Math.max(0, ends - Date.now()) + 50));
    expectError(await signed(first, "b.x"), 401, "unauthorized");
    expect((await signed(second, "b.x")).status).toBe(202);
    expect(JSON.stringify(r.body.producer)).not.toContain(second);
  });

  it("answers show webhook urls and key ids with their last use, never a secret", async () => {
    const secret = `whk_${randomBytes(8).toString("hex")}`;
    const t = await admin.patch("/v1/admin/tenants/acme", { webhook: { url: "https://h.example/hook", secret } });
    expect(t.status, t.text).toBe(200);
    expect(t.body.tenant.webhook).toEqual({ url: "https://h.example/hook" });
    expect(t.text).not.toContain(secret);
    expect(t.text).not.toContain(HOST);
    expect((await client(server.url, bearer(HOST)).get("/v1/waits?limit=1")).status).toBe(200);
    const keys = await until(async () => {
      const r = await admin.get("/v1/admin/tenants/acme/host-keys");
      return r.body.hostKeys[0]?.lastUsedAt ? r.body.hostKeys : undefined;
    }, 5000);
    expect(keys[0].id).toMatch(/^hk_[0-9a-f]{16}$/);
    expectTimes(keys);
    expect((await admin.patch("/v1/admin/tenants/acme", { webhook: null })).body.tenant.webhook).toBeNull();
  });

  it("delete refuses a tenant with waiting waits unless forced; its credentials are refused at once after", async () => {
    const name = `gone-${run}`;
    expect((await admin.post("/v1/admin/tenants", { name })).status).toBe(201);
    const key = (await admin.post(`/v1/admin/tenants/${name}/host-keys`, {})).body.key as string;
    const host = client(server.url, bearer(key));
    await soon(
      async () =>
        (await host.post("/v1/waits", { runId: "r", position: "p", eventType: "a.b", correlationId: "c" })).status ===
        201,
    );
    expect(expectError(await admin.delete(`/v1/admin/tenants/${name}`), 409, "tenant_has_waits").waiting).toBe(1);
    const d = await admin.delete(`/v1/admin/tenants/${name}?force=true`);
    expect(d.status, d.text).toBe(200);
    expect(d.body).toEqual({ deleted: name, waiting: 1 });
    await soon(async () => (await host.get("/v1/waits")).status === 401);
    expectError(await admin.get(`/v1/admin/tenants/${name}`), 404, "not_found");
    const audit = (await admin.get("/v1/admin/audit?limit=2")).body;
    expect(audit.entries[0]).toMatchObject({ action: "tenant.delete", target: name });
    expect(audit.nextBefore).toEqual(expect.any(String));
    const older = await admin.get(`/v1/admin/audit?limit=2&before=${audit.nextBefore}`);
    expect(older.body.entries[0].id < audit.entries[1].id).toBe(true);
  });

  it("a webhook set at run time gets the tenant's continuations, signed with its secret (started with no webhook at all)", async () => {
    const got: Array<{ body: string; signature: string }> = [];
    const hook = createServer((req, res) => {
      let body = "";
      req.on("data", (d: Buffer) => {
        body += d.toString();
      });
      req.on("end", () => {
        got.push({ body, signature: String(req.headers["rendezvous-signature"]) });
        res.end("ok");
      });
    });
    await new Promise<void>((r) => hook.listen(0, "127.0.0.1", () => r()));
    try {
      const port = (hook.address() as { port: number }).port;
      const secret = `whk_${randomBytes(8).toString("hex")}`;
      const name = `hooked-${run}`;
      const made = await admin.post("/v1/admin/tenants", {
        name,
        webhook: { url: `http://127.0.0.1:${port}/h`, secret },
      });
      expect(made.status, made.text).toBe(201);
      const key = (await admin.post(`/v1/admin/tenants/${name}/host-keys`, {})).body.key as string;
      const host = client(server.url, bearer(key));
      let waitId = "";
      await soon(async () => {
        const r = await host.post("/v1/waits", { runId: "r", position: "p", eventType: "a.b", correlationId: "c" });
        waitId = r.body?.wait?.id ?? "";
        return r.status === 201;
      });
      expect((await host.post("/v1/deliver", { eventType: "a.b", correlationId: "c" })).body.delivered).toEqual([
        waitId,
      ]);
      const delivery = await until(async () => got[0], 10_000);
      expect(JSON.parse(delivery.body).wait.id).toBe(waitId);
      const [, t, v1] = /^t=(\d+),v1=([0-9a-f]{64})$/.exec(delivery.signature) ?? [];
      expect(v1).toBe(createHmac("sha256", secret).update(`${t}.${delivery.body}`).digest("hex"));
    } finally {
      await new Promise((r) => hook.close(r));
    }
  });

  it("the admin CLI's HTTP subcommands call the routes and exit 1 with the error code", async () => {
    const cli = async (...args: string[]) => {
      const p = spawnCli(["admin", ...args, "--url", server.url], { RENDEZVOUS_TOKEN: ADMIN });
      const { code } = await p.exited;
      return { code, out: p.output(), err: p.errors() };
    };
    const name = `cli-${run}`;
    const made = await cli("tenant", "create", name);
    expect(made.code, made.out).toBe(0);
    expect(JSON.parse(made.out).tenant.name).toBe(name);
    const again = await cli("tenant", "create", name);
    expect(again.code).toBe(1);
    expect(again.err).toMatch(/409 already_exists/);
    const key = await cli("host-key", "create", name);
    expect(key.code, key.out).toBe(0);
    expect(JSON.parse(key.out).key).toMatch(/^rdv_hk_/);
    const producer = await cli("producer", "create", name, "src", "--event-types", "a.*,b.c", "--secret");
    expect(producer.code, producer.out).toBe(0);
    expect(JSON.parse(producer.out)).toMatchObject({ producer: { eventTypes: ["a.*", "b.c"] } });
    expect(JSON.parse(producer.out).secret).toMatch(/^rdv_ps_/);
    expect((await cli("tenant", "disable", name)).code).toBe(0);
    expect((await admin.get(`/v1/admin/tenants/${name}`)).body.tenant.disabled).toBe(true);
    const audit = await cli("audit", "--limit", "3");
    expect(JSON.parse(audit.out).entries[0]).toMatchObject({ action: "tenant.update", target: name });
    const refused = spawnCli(["admin", "tenant", "list", "--url", server.url], { RENDEZVOUS_TOKEN: "wrong" });
    expect((await refused.exited).code).toBe(1);
    expect(refused.errors()).toMatch(/401 unauthorized/);
  }, 60_000);
});
