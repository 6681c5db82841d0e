/**
 * The runtime registry across real processes (docs/api.md, Admin): `api` ×2, `matcher`,
 * `dispatcher` and `scheduler` on one Redis. A tenant and producer created through one
 * API work through both within 1 s; a revoked key is refused by both within 1 s; a
 * rotated key works until its overlap ends; a restart keeps a revoke; nothing secret is
 * in Redis in clear; `admin apply` prints its diff (dry run) and applies it.
 */
import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { createRedis, keyHash, type RedisLike, SecretKey } from "@rendezvous/engine";
import { type CliProcess, redisUrl, spawnCli } from "@rendezvous/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  bearer,
  type Client,
  client,
  expectError,
  LISTENING,
  producerKey,
  request,
  type Started,
  settled,
  sign,
  sleep,
  startServer,
  until,
} from "./e2e-helpers.js";

const ADMIN = `adm_${randomBytes(12).toString("hex")}`;
const SEED_HOST = `hk_seed_${randomBytes(12).toString("hex")}`;
const SEED_PKEY = `pk_seed_${randomBytes(12).toString("hex")}`;
const SEED_SECRET = `whsec_seed_${randomBytes(12).toString("hex")}`;
const SEED_WEBHOOK = `whk_seed_${randomBytes(12).toString("hex")}`;
const SECRET_KEY = randomBytes(32).toString("hex");
const run = Date.now().toString(36);
const TENANT = `fresh-${run}`;

const CONFIG = {
  adminToken: ADMIN,
  tenants: {
    seeded: {
      hostKeys: [SEED_HOST],
      webhook: { url: "http://127.0.0.1:9/hook", secret: SEED_WEBHOOK },
      producers: { p: { secrets: [SEED_SECRET], keys: [SEED_PKEY], eventTypes: ["order.*"] } },
    },
  },
  eventTypes: { "order.paid": { payloadSchema: { type: "object", required: ["amount"] } } },
};

/** every credential value the test saw: none may be stored in clear */
const secrets = new Set([SEED_HOST, SEED_PKEY, SEED_SECRET, SEED_WEBHOOK, SECRET_KEY]);

let api1: Started;
let api2: CliProcess;
let api2Url: string;
let roles: CliProcess[] = [];
let admin: Client;
const env = () => ({ RENDEZVOUS_PREFIX: api1.prefix, RENDEZVOUS_SECRET_KEY: SECRET_KEY });

function spawnRole(role: string): CliProcess {
  return spawnCli([role, "--config", api1.configFile, "--redis-url", redisUrl(), "--port", "0"], env());
}

async function startApi2(): Promise<void> {
  api2 = spawnRole("api");
  api2Url = (await api2.waitFor(LISTENING, 25_000))[1] as string;
}

const apis = () => [api1.url, api2Url];

/** how long each change took to be seen (printed at the end: the propagation figures) */
const seen: number[] = [];

/** ms from `t0` until `check` holds. */
async function within(t0: number, check: () => Promise<boolean>): Promise<number> {
  await until(async () => (await check()) || undefined, 10_000);
  const ms = Date.now() - t0;
  seen.push(ms);
  return ms;
}

beforeAll(async () => {
  api1 = await startServer({ config: CONFIG, role: "api", env: { RENDEZVOUS_SECRET_KEY: SECRET_KEY } });
  await startApi2();
  roles = ["matcher", "dispatcher", "scheduler"].map(spawnRole);
  await Promise.all(roles.map((r) => r.waitFor(LISTENING, 25_000)));
  admin = client(api1.url, bearer(ADMIN));
}, 90_000);

afterAll(async () => {
  const sorted = [...seen].sort((a, b) => a - b);
  process.stdout.write(
    `registry changes seen after (ms): n=${sorted.length} max=${sorted.at(-1)} median=${sorted[sorted.length >> 1]}\n`,
  );
  await Promise.all([api2, ...roles].filter(Boolean).map((p) => p.terminate()));
  if (api1) await api1.proc.terminate();
});

const waitBody = (i: string) => ({
  runId: `run-${run}-${i}`,
  position: "p",
  eventType: "order.paid",
  correlationId: `c-${run}-${i}`,
});

describe("the registry across processes", () => {
  let hostKey = "";
  let hostKeyId = "";
  let producerKeyValue = "";
  let producerSecret = "";

  it("a tenant and a producer created through the API register and resolve waits on both APIs within 1 s", async () => {
    expectError(await client(api1.url, bearer(SEED_HOST)).get("/v1/admin/tenants"), 401, "unauthorized");
    const t = await admin.post("/v1/admin/tenants", { name: TENANT });
    expect(t.status, t.text).toBe(201);
    expect(t.body.tenant).toMatchObject({ name: TENANT, disabled: false, producers: [], hostKeys: [] });
    expectError(await admin.post("/v1/admin/tenants", { name: TENANT }), 409, "already_exists");
    const k = await admin.post(`/v1/admin/tenants/${TENANT}/host-keys`, {});
    expect(k.status, k.text).toBe(201);
    hostKey = k.body.key;
    hostKeyId = k.body.hostKey.id;
    expect(hostKey).toMatch(/^rdv_hk_/);
    const p = await admin.post(`/v1/admin/tenants/${TENANT}/producers`, {
      id: "src",
      eventTypes: ["order.*"],
      credentials: ["key", "secret"],
    });
    expect(p.status, p.text).toBe(201);
    producerKeyValue = p.body.key;
    producerSecret = p.body.secret;
    for (const s of [hostKey, producerKeyValue, producerSecret]) secrets.add(s);
    // shown once: the producer's answer names ids only
    expect(JSON.stringify(p.body.producer)).not.toContain(producerKeyValue);
    expect(p.body.producer.keys).toHaveLength(1);
    expect(p.body.producer.secrets).toHaveLength(1);
    const t0 = Date.now();

    // a wait through each API, with the new tenant's key
    const waits: string[] = [];
    for (const [i, url] of apis().entries()) {
      const ms = await within(t0, async () => {
        const r = await client(url, bearer(hostKey)).post("/v1/waits", waitBody(`a${i}`));
        if (r.status === 201) waits.push(r.body.wait.id);
        return r.status === 201;
      });
      expect(ms, `host key on api ${i + 1}`).toBeLessThan(1000);
    }
    // the event of each wait through the other API: a bearer key on one, a signature on the other
    const e0 = await within(t0, async () => {
      const r = await client(api2Url, producerKey(`${TENANT}/src`, producerKeyValue)).post("/v1/events", {
        id: `e-${run}-a0`,
        type: "order.paid",
        correlationId: `c-${run}-a0`,
        payload: { amount: 1 },
      });
      return r.status === 202 || r.status === 200;
    });
    expect(e0, "producer key on api 2").toBeLessThan(1000);
    const raw = JSON.stringify({
      id: `e-${run}-a1`,
      type: "order.paid",
      correlationId: `c-${run}-a1`,
      payload: { amount: 2 },
    });
    const e1 = await within(t0, async () => {
      const r = await request(api1.url, "POST", "/v1/events", {
        raw,
        headers: {
          "content-type": "application/json",
          "rendezvous-producer": `${TENANT}/src`,
          "rendezvous-signature": sign(producerSecret, raw),
        },
      });
      return r.status === 202 || r.status === 200;
    });
    expect(e1, "producer secret on api 1").toBeLessThan(1000);
    for (const [i, id] of waits.entries()) {
      const w = await settled(client(apis()[1 - i] as string, bearer(hostKey)), id);
      expect(w.state).toBe("resolved");
      expect(w.resolution.event.producer).toBe("src");
    }
    // the payload schema of the registry applies to the new producer too
    expectError(
      await client(api1.url, producerKey(`${TENANT}/src`, producerKeyValue)).post("/v1/events", {
        id: `e-${run}-bad`,
        type: "order.paid",
        correlationId: "x",
      }),
      400,
      "invalid_event",
    );
  });

  it("the tenant created at run time shows in Bull Board and the queue gauges of both APIs, no restart", async () => {
    const queue = `continuations.${TENANT}`;
    for (const url of apis()) {
      await until(async () => {
        const board = await request(url, "GET", "/admin/queues/api/queues", { headers: bearer(ADMIN) });
        const metrics = await request(url, "GET", "/metrics");
        const names = ((board.body?.queues ?? []) as Array<{ name: string }>).map((q) => q.name);
        return (names.includes(queue) && metrics.text.includes(`queue="${queue}"`)) || undefined;
      }, 10_000);
    }
  });

  it("rotate with an overlap: both keys work on both APIs until the window ends, then only the new one", async () => {
    const r = await admin.post(`/v1/admin/tenants/${TENANT}/host-keys/${hostKeyId}/rotate`, { overlapSeconds: 2 });
    expect(r.status, r.text).toBe(201);
    const fresh = r.body.key as string;
    secrets.add(fresh);
    expect(r.body.rotated.id).toBe(hostKeyId);
    const ends = Date.parse(r.body.rotated.expiresAt);
    expect(ends - Date.now()).toBeGreaterThan(1000);
    const t0 = Date.now();
    const ok = async (url: string, key: string) =>
      (await client(url, bearer(key)).get("/v1/waits?limit=1")).status === 200;
    for (const url of apis()) expect(await within(t0, () => ok(url, fresh))).toBeLessThan(1000);
    for (const url of apis()) expect(await ok(url, hostKey), "old key inside the window").toBe(true);
    expect(Date.now()).toBeLessThan(ends);
    await new Promise((res) => setTimeout(res, Math.max(0, ends - Date.now()) + 50));
    for (const url of apis()) {
      expect(await ok(url, hostKey), "old key after the window").toBe(false);
      expect(await ok(url, fresh), "new key after the window").toBe(true);
    }
    hostKey = fresh;
    hostKeyId = r.body.hostKey.id;
  });

  it("a revoked host key and producer key are refused by both APIs within 1 s", async () => {
    const r = await admin.delete(`/v1/admin/tenants/${TENANT}/host-keys/${hostKeyId}`);
    expect(r.status, r.text).toBe(200);
    expect(r.body.revoked.id).toBe(hostKeyId);
    const t0 = Date.now();
    for (const url of apis()) {
      const ms = await within(
        t0,
        async () => (await client(url, bearer(hostKey)).get("/v1/waits?limit=1")).status === 401,
      );
      expect(ms).toBeLessThan(1000);
    }
    const producer = (await admin.get(`/v1/admin/tenants/${TENANT}/producers/src`)).body.producer;
    const keyId = producer.keys[0].id as string;
    expect((await admin.delete(`/v1/admin/tenants/${TENANT}/producers/src/credentials/${keyId}`)).status).toBe(200);
    const t1 = Date.now();
    for (const url of apis()) {
      const ms = await within(t1, async () => {
        const e = await client(url, producerKey(`${TENANT}/src`, producerKeyValue)).post("/v1/events", {
          id: `e-${run}-${randomBytes(4).toString("hex")}`,
          type: "order.paid",
          correlationId: "x",
          payload: { amount: 1 },
        });
        return e.status === 401;
      });
      expect(ms).toBeLessThan(1000);
    }
  });

  it("a disabled tenant is refused and keeps its data; delete is refused while it has waiting waits unless forced", async () => {
    const k = await admin.post(`/v1/admin/tenants/${TENANT}/host-keys`, {});
    const key = k.body.key as string;
    secrets.add(key);
    const host = client(api2Url, bearer(key));
    await until(async () => (await host.post("/v1/waits", waitBody("d"))).status === 201 || undefined, 5000);
    expect((await admin.patch(`/v1/admin/tenants/${TENANT}`, { disabled: true })).status).toBe(200);
    const t0 = Date.now();
    for (const url of apis()) {
      expect(
        await within(t0, async () => (await client(url, bearer(key)).get("/v1/waits")).status === 401),
      ).toBeLessThan(1000);
    }
    const kept = await client(api1.url, bearer(ADMIN)).get(`/v1/waits?tenant=${TENANT}&state=waiting`);
    expect(kept.status, kept.text).toBe(200);
    expect(kept.body.waits.length).toBeGreaterThan(0);
    const refused = expectError(await admin.delete(`/v1/admin/tenants/${TENANT}`), 409, "tenant_has_waits");
    expect(refused.waiting).toBeGreaterThan(0);
    expect((await admin.patch(`/v1/admin/tenants/${TENANT}`, { disabled: false })).status).toBe(200);
    const t1 = Date.now();
    expect(await within(t1, async () => (await host.get("/v1/waits")).status === 200)).toBeLessThan(1000);
  });

  it("a disabled tenant's completion tokens are refused (404 token_invalid) on both APIs within 1 s, and work again once enabled", async () => {
    const k = await admin.post(`/v1/admin/tenants/${TENANT}/host-keys`, {});
    const key = k.body.key as string;
    secrets.add(key);
    const host = client(api1.url, bearer(key));
    let reg = await host.post("/v1/waits", { ...waitBody("tok"), timeoutMs: 60_000, token: true });
    await until(async () => {
      if (reg.status !== 201)
        reg = await host.post("/v1/waits", { ...waitBody("tok"), timeoutMs: 60_000, token: true });
      return reg.status === 201 || undefined;
    }, 5000);
    const token = reg.body.token.value as string;
    secrets.add(token);
    const path = `/v1/tokens/${encodeURIComponent(token)}`;
    expect((await admin.patch(`/v1/admin/tenants/${TENANT}`, { disabled: true })).status).toBe(200);
    const t0 = Date.now();
    for (const url of apis()) {
      expect(
        // (polled at most ~6 times a second: the token's own rate limit is 10/s per process)
        await within(t0, async () => {
          await sleep(150);
          return (await request(url, "POST", `${path}/heartbeat`, { json: {} })).status === 404;
        }),
      ).toBeLessThan(1000);
      expectError(await request(url, "POST", `${path}/complete`, { json: {} }), 404, "token_invalid");
      expectError(await request(url, "POST", `${path}/fail`, { json: { error: { m: "x" } } }), 404, "token_invalid");
    }
    const kept = await admin.get(`/v1/waits/${reg.body.wait.id}?tenant=${TENANT}`);
    expect(kept.body.wait.state, kept.text).toBe("waiting");
    expect((await admin.patch(`/v1/admin/tenants/${TENANT}`, { disabled: false })).status).toBe(200);
    await until(async () => {
      const r = await request(api2Url, "POST", `${path}/complete`, { json: {} });
      return r.status === 200 || undefined;
    }, 5000);
    expect((await admin.get(`/v1/waits/${reg.body.wait.id}?tenant=${TENANT}`)).body.wait.state).toBe("resolved");
  });

  it("a restart with the same config file keeps a revoke made through the API", async () => {
    const seeded = (await admin.get("/v1/admin/tenants/seeded")).body.tenant;
    expect(seeded.hostKeys).toHaveLength(1);
    const id = seeded.hostKeys[0].id as string;
    expect((await admin.delete(`/v1/admin/tenants/seeded/host-keys/${id}`)).status).toBe(200);
    const t0 = Date.now();
    expect(
      await within(t0, async () => (await client(api2Url, bearer(SEED_HOST)).get("/v1/waits")).status === 401),
    ).toBeLessThan(1000);
    await api2.terminate();
    await startApi2();
    expectError(await client(api2Url, bearer(SEED_HOST)).get("/v1/waits"), 401, "unauthorized");
    // the seeded producer still works after the restart
    const e = await client(api2Url, producerKey("seeded/p", SEED_PKEY)).post("/v1/events", {
      id: `e-${run}-seed`,
      type: "order.shipped",
      correlationId: "x",
    });
    expect(e.status, e.text).toBe(202);
  }, 40_000);

  it("every process serves the registry's version (rendezvous_registry_version on /metrics)", async () => {
    const version = (await admin.get("/v1/admin/registry")).body.version as number;
    expect(version).toBeGreaterThan(5);
    const urls = [
      api1.url,
      api2Url,
      ...(await Promise.all(roles.map(async (r) => (await r.waitFor(LISTENING))[1] as string))),
    ];
    for (const url of urls) {
      await until(async () => {
        const m = await request(url, "GET", "/metrics");
        return new RegExp(`^rendezvous_registry_version ${version}$`, "m").test(m.text) || undefined;
      }, 1000);
    }
  });

  it("the audit trail names every change and the admin credential's id, never the token", async () => {
    const a = await admin.get("/v1/admin/audit?limit=500");
    expect(a.status, a.text).toBe(200);
    const actions = a.body.entries.map((e: { action: string }) => e.action);
    for (const action of [
      "seed",
      "tenant.create",
      "hostkey.create",
      "hostkey.rotate",
      "hostkey.revoke",
      "producer.create",
    ]) {
      expect(actions).toContain(action);
    }
    const mine = a.body.entries.find((e: { action: string }) => e.action === "tenant.create");
    expect(mine).toMatchObject({ actor: expect.stringMatching(/^adm_[0-9a-f]{12}$/), target: TENANT });
    expect(a.text).not.toContain(ADMIN);
  });
});

/** Every key of the prefix (and the BullMQ queues under it) as text, whatever its type. */
async function dumpEverything(redis: RedisLike, prefix: string): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  let cursor = "0";
  do {
    const [next, keys] = await redis.scan(cursor, "MATCH", `*${prefix}*`, "COUNT", 1000);
    cursor = next;
    for (const key of keys) {
      const type = await redis.type(key);
      let value: unknown;
      if (type === "string") value = await redis.getBuffer(key);
      else if (type === "hash") value = await redis.hgetall(key);
      else if (type === "list") value = await redis.lrange(key, 0, -1);
      else if (type === "set") value = await redis.smembers(key);
      else if (type === "zset") value = await redis.zrange(key, "0", "-1", "WITHSCORES");
      else if (type === "stream") value = await redis.xrange(key, "-", "+");
      else value = `(${type})`;
      out.set(key, Buffer.isBuffer(value) ? value.toString("latin1") : JSON.stringify(value));
    }
  } while (cursor !== "0");
  return out;
}

describe("the secret key", () => {
  it("a process with another key than the registry's exits 1 before serving, in one stderr line", async () => {
    const other = spawnCli(["api", "--config", api1.configFile, "--redis-url", redisUrl(), "--port", "0"], {
      RENDEZVOUS_PREFIX: api1.prefix,
      RENDEZVOUS_SECRET_KEY: randomBytes(32).toString("hex"),
    });
    expect((await other.exited).code).toBe(1);
    expect(other.errors().trim()).toMatch(/^rendezvous: the secret key does not match the registry's/);
    expect(other.output()).not.toMatch(LISTENING);
  });

  it("without RENDEZVOUS_SECRET_KEY, split roles with their own data dirs (and an apply run first from another) share the registry's development key", async () => {
    const prefix = `${api1.prefix}k`;
    const dirs = ["apply", "api", "matcher"].map((d) => join(api1.dir, `data-${d}`));
    const noKey = { RENDEZVOUS_PREFIX: prefix, RENDEZVOUS_SECRET_KEY: undefined };
    // the CLI first, from a data dir of its own (a laptop): it must not pin a key of its own
    const apply = spawnCli(
      ["admin", "apply", api1.configFile, "--redis-url", redisUrl(), "--data-dir", dirs[0] as string],
      noKey,
    );
    expect((await apply.exited).code, apply.output() + apply.errors()).toBe(0);
    const role = (name: string, dir: string) =>
      spawnCli([name, "--config", api1.configFile, "--redis-url", redisUrl(), "--port", "0", "--data-dir", dir], noKey);
    const api = role("api", dirs[1] as string);
    const matcher = role("matcher", dirs[2] as string);
    try {
      const [apiUrl, matcherUrl] = await Promise.all(
        [api, matcher].map(async (p) => (await p.waitFor(LISTENING, 25_000))[1] as string),
      );
      expect((await request(matcherUrl as string, "GET", "/healthz")).status).toBe(200);
      expect(api.output()).toMatch(/RENDEZVOUS_SECRET_KEY is not set/);
      // the seeded HMAC secret was encrypted by the CLI and decrypts in the API: one key
      const host = client(apiUrl as string, bearer(SEED_HOST));
      const w = await host.post("/v1/waits", { ...waitBody("dev"), runId: `run-${run}-dev` });
      expect(w.status, w.text).toBe(201);
      const raw = JSON.stringify({
        id: `e-${run}-dev`,
        type: "order.paid",
        correlationId: `c-${run}-dev`,
        payload: { amount: 3 },
      });
      const e = await request(apiUrl as string, "POST", "/v1/events", {
        raw,
        headers: {
          "content-type": "application/json",
          "rendezvous-producer": "seeded/p",
          "rendezvous-signature": sign(SEED_SECRET, raw),
        },
      });
      expect(e.status, e.text).toBe(202);
      // the matcher (another data dir) resolves it
      expect((await settled(host, w.body.wait.id as string)).state).toBe("resolved");
      // nothing was written to any data dir
      for (const dir of dirs) expect(existsSync(dir), dir).toBe(false);
    } finally {
      await Promise.all([api.terminate(), matcher.terminate()]);
    }
  }, 60_000);

  it("without RENDEZVOUS_SECRET_KEY, start on a new registry keeps its key in DIR/secret.key (0600), never in Redis, and starts again with it", async () => {
    const prefix = `${api1.prefix}s`;
    const dir = join(api1.dir, "data-start");
    const start = () =>
      spawnCli(["start", "--config", api1.configFile, "--redis-url", redisUrl(), "--port", "0", "--data-dir", dir], {
        RENDEZVOUS_PREFIX: prefix,
        RENDEZVOUS_SECRET_KEY: undefined,
      });
    const first = start();
    await first.waitFor(LISTENING, 25_000);
    await first.terminate();
    const file = join(dir, "secret.key");
    expect(statSync(file).mode & 0o777).toBe(0o600);
    const key = SecretKey.parse(readFileSync(file, "utf8"));
    const redis = createRedis(redisUrl(), { name: "test:start-key" });
    try {
      const meta = await redis.hgetall(`{${prefix}:reg}:m`);
      expect(meta.keycheck).toBe(key.check());
      expect(meta.devkey).toBeUndefined();
      // the key is nowhere in Redis under this prefix
      for (const k of await redis.keys(`*${prefix}*`)) {
        const type = await redis.type(k);
        const text =
          type === "hash" ? JSON.stringify(await redis.hgetall(k)) : type === "string" ? await redis.get(k) : "";
        expect(text ?? "").not.toContain(key.toHex());
      }
    } finally {
      redis.disconnect();
    }
    const again = start();
    await again.waitFor(LISTENING, 25_000);
    await again.terminate();
  }, 60_000);

  it("a registry written under an earlier version's DIR/secret.key keeps working with that file, and refuses another dir", async () => {
    const prefix = `${api1.prefix}f`;
    const dir = join(api1.dir, "data-legacy");
    mkdirSync(dir, { recursive: true });
    const legacy = randomBytes(32).toString("hex");
    writeFileSync(join(dir, "secret.key"), `${legacy}\n`, { mode: 0o600 });
    const redis = createRedis(redisUrl(), { name: "test:legacy" });
    try {
      await redis.hset(`{${prefix}:reg}:m`, "keycheck", SecretKey.parse(legacy).check());
    } finally {
      redis.disconnect();
    }
    const role = (d: string) =>
      spawnCli(["api", "--config", api1.configFile, "--redis-url", redisUrl(), "--port", "0", "--data-dir", d], {
        RENDEZVOUS_PREFIX: prefix,
        RENDEZVOUS_SECRET_KEY: undefined,
      });
    const other = role(join(api1.dir, "data-elsewhere"));
    expect((await other.exited).code).toBe(1);
    expect(other.errors().trim()).toMatch(/^rendezvous: the secret key does not match the registry's/);
    const kept = role(dir);
    await kept.waitFor(LISTENING, 25_000);
    await kept.terminate();
  }, 40_000);
});

describe("secrets at rest", () => {
  it("no host key, producer key or HMAC secret (nor the webhook secret) is stored in Redis, logged or answered in clear", async () => {
    const redis = createRedis(redisUrl(), { name: "test:dump" });
    try {
      const dump = await dumpEverything(redis, api1.prefix);
      const registryKeys = [...dump.keys()].filter((k) => k.startsWith(`{${api1.prefix}:reg}`));
      expect(registryKeys.length).toBeGreaterThanOrEqual(3);
      // the dump reaches the records: the seeded producer key is there, as its HMAC under the
      // secret key only (no plain SHA-256 of it, nor of part of it, to guess against offline)
      const values = [...dump.values()];
      expect(values.some((text) => text.includes(SecretKey.parse(SECRET_KEY).mac(SEED_PKEY)))).toBe(true);
      for (const weak of [SEED_PKEY, SEED_HOST]) {
        expect(values.some((text) => text.includes(keyHash(weak).slice(0, 16)))).toBe(false);
      }
      expect(secrets.size).toBeGreaterThanOrEqual(9);
      for (const [key, text] of dump) {
        for (const s of secrets) expect(text.includes(s), `${key} holds a secret in clear`).toBe(false);
      }
    } finally {
      redis.disconnect();
    }
    const tenants = await admin.get("/v1/admin/tenants");
    const logs = [api1.proc.output(), api2.output(), ...roles.map((r) => r.output())].join("\n");
    for (const s of secrets) {
      expect(tenants.text.includes(s), "admin answer").toBe(false);
      expect(logs.includes(s), "a log line").toBe(false);
    }
  });
});

describe("rendezvous admin apply", () => {
  it("--dry-run prints the diff and changes nothing; without it the diff is applied, one version", async () => {
    const file = join(api1.dir, "apply.json");
    const next = structuredClone(CONFIG) as typeof CONFIG & { tenants: Record<string, unknown> };
    next.tenants.seeded.producers.p.eventTypes = ["order.*", "invoice.*"];
    next.tenants.applied = { hostKeys: [], producers: {} };
    writeFileSync(file, JSON.stringify(next));
    const applyCli = async (...extra: string[]) => {
      const p = spawnCli(["admin", "apply", file, "--redis-url", redisUrl(), ...extra], env());
      const { code } = await p.exited;
      expect(code, p.output()).toBe(0);
      return p.output().trim().split("\n");
    };
    const before = (await admin.get("/v1/admin/registry")).body.version as number;
    // a bad file: exit 1 naming the field, nothing written
    const badFile = join(api1.dir, "bad.json");
    writeFileSync(badFile, JSON.stringify({ ...next, eventTypes: { "x.y": { payloadSchema: { type: "nope" } } } }));
    const bad = spawnCli(["admin", "apply", badFile, "--redis-url", redisUrl()], env());
    expect((await bad.exited).code).toBe(1);
    expect(bad.errors()).toMatch(/^rendezvous: .*eventTypes\.x\.y\.payloadSchema/m);
    expect((await admin.get("/v1/admin/registry")).body.version).toBe(before);
    const dry = await applyCli("--dry-run");
    // the API-made tenant goes, the seeded host key revoked through the API comes back, the rest as edited
    expect(dry).toEqual(
      expect.arrayContaining([
        "+ tenant applied",
        "~ producer seeded/p",
        `- tenant ${TENANT}`,
        `- producer ${TENANT}/src`,
        expect.stringMatching(/^\+ hostkey seeded\/hk_[0-9a-f]{16}$|^\+ hostkey hk_[0-9a-f]{16}$/),
      ]),
    );
    expect(dry.at(-1)).toMatch(/^\d+ changes$/);
    for (const s of secrets) expect(dry.join("\n")).not.toContain(s);
    expect((await admin.get("/v1/admin/registry")).body.version).toBe(before);
    expect((await admin.get("/v1/admin/tenants/applied")).status).toBe(404);

    const applied = await applyCli();
    expect(applied.at(-1)).toBe(`applied ${dry.length - 1} changes (registry version ${before + 1})`);
    expect((await admin.get("/v1/admin/tenants/applied")).status).toBe(200);
    expect((await admin.get(`/v1/admin/tenants/${TENANT}`)).status).toBe(404);
    const t0 = Date.now();
    expect(
      await within(t0, async () => (await client(api2Url, bearer(SEED_HOST)).get("/v1/waits")).status === 200),
    ).toBeLessThan(1000);
    expect(await applyCli("--dry-run")).toEqual(["no changes"]);
  }, 30_000);
});
