/**
 * The registry on a Redis Cluster (project `cluster`): its keys share one slot, so its
 * commit script, snapshot MULTI and pub/sub work there as on one Redis. Two API
 * processes: a tenant created through one is served by the other within 1 s, and a
 * revoked key is refused by both within 1 s.
 */
import { randomBytes } from "node:crypto";
import { type CliProcess, redisUrl, spawnCli } from "@rendezvous/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bearer, client, LISTENING, type Started, startServer, until } from "./e2e-helpers.js";

const ADMIN = `adm_${randomBytes(12).toString("hex")}`;
const SECRET_KEY = randomBytes(32).toString("hex");
let api1: Started;
let api2: CliProcess;
let api2Url: string;

beforeAll(async () => {
  const config = { adminToken: ADMIN, tenants: { seeded: { hostKeys: [`hk_${randomBytes(8).toString("hex")}`] } } };
  api1 = await startServer({ config, role: "api", env: { RENDEZVOUS_SECRET_KEY: SECRET_KEY } });
  api2 = spawnCli(["api", "--config", api1.configFile, "--redis-url", redisUrl(), "--port", "0"], {
    RENDEZVOUS_PREFIX: api1.prefix,
    RENDEZVOUS_SECRET_KEY: SECRET_KEY,
  });
  api2Url = (await api2.waitFor(LISTENING, 25_000))[1] as string;
}, 60_000);

afterAll(async () => {
  await api2?.terminate();
  await api1?.proc.terminate();
});

describe("the registry on a cluster", () => {
  it("a key made through one API works on the other within 1 s; revoked, both refuse it within 1 s", async () => {
    expect(redisUrl()).toMatch(/^redis\+cluster:/);
    const admin = client(api1.url, bearer(ADMIN));
    expect((await admin.post("/v1/admin/tenants", { name: "clustered" })).status).toBe(201);
    const made = await admin.post("/v1/admin/tenants/clustered/host-keys", {});
    expect(made.status, made.text).toBe(201);
    const t0 = Date.now();
    for (const url of [api1.url, api2Url]) {
      const host = client(url, bearer(made.body.key));
      await until(async () => (await host.get("/v1/waits?limit=1")).status === 200 || undefined, 5000);
    }
    expect(Date.now() - t0).toBeLessThan(1000);
    expect((await admin.delete(`/v1/admin/tenants/clustered/host-keys/${made.body.hostKey.id}`)).status).toBe(200);
    const t1 = Date.now();
    for (const url of [api1.url, api2Url]) {
      const host = client(url, bearer(made.body.key));
      await until(async () => (await host.get("/v1/waits?limit=1")).status === 401 || undefined, 5000);
    }
    expect(Date.now() - t1).toBeLessThan(1000);
    const audit = await admin.get("/v1/admin/audit");
    expect(audit.body.entries.map((e: { action: string }) => e.action)).toEqual(
      expect.arrayContaining(["seed", "tenant.create", "hostkey.create", "hostkey.revoke"]),
    );
  });
});
