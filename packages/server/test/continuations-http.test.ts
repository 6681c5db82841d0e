/**
 * Continuations over HTTP (docs/api.md) against a real `rendezvous start` process:
 * - claim / ack / extend / lease_expired, another tenant's lease id, the admin with ?tenant=;
 * - a claim with `consume: true` (each lease consumed for the claimer), acks of several leases
 *   in one `POST /v1/continuations/ack`;
 * - the lease bound (an unacknowledged lease comes back after ≈ leaseMs, not before, with
 *   attempt 2) and the long-poll bound (an empty claim answers `[]` after waitMs; a claim
 *   answers early when a continuation arrives; a waiting long poll does not poll Redis);
 * - two tenants, two workers each (one in this process, one a child process SIGKILLed while it
 *   holds leases): every continuation is processed and acknowledged, each wait consumed first
 *   exactly once, no worker sees another tenant's continuation.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { connect } from "node:net";
import { fileURLToPath } from "node:url";
import { type Continuation, ContinuationWorker, HostClient } from "@rendezvous/client";
import { redisUrl } from "@rendezvous/testkit";
import { Queue } from "bullmq";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bearer, client, expectError, type Json, type Started, sleep, startServer, until } from "./e2e-helpers.js";

const ADMIN = "adm_claims_test";
/** initech: the tests of consume-in-claim, batch acks and the wake-up (its queue apart from the others' counts) */
const KEYS = { acme: "hk_acme_claims", globex: "hk_globex_claims", initech: "hk_initech_claims" } as const;
type Tenant = keyof typeof KEYS;
const CONFIG = {
  partitions: 4,
  adminToken: ADMIN,
  tenants: {
    acme: { hostKeys: [KEYS.acme] },
    globex: { hostKeys: [KEYS.globex] },
    initech: { hostKeys: [KEYS.initech] },
  },
};

let server: Started;
let redis: Redis;
beforeAll(async () => {
  server = await startServer({ config: CONFIG });
  redis = new Redis(redisUrl(), { maxRetriesPerRequest: null });
}, 40_000);
afterAll(async () => {
  redis?.disconnect();
  if (server) expect((await server.proc.terminate()).code).toBe(0);
});

const host = (tenant: Tenant) => client(server.url, bearer(KEYS[tenant]));
let seq = 0;

/** Registers `n` waits of the tenant and resolves them (deliver): n continuations. */
async function resolved(tenant: Tenant, n: number): Promise<string[]> {
  const h = host(tenant);
  const type = `job.t${++seq}`;
  const ids: string[] = [];
  for (let i = 0; i < n; i++) {
    const r = await h.post("/v1/waits", {
      runId: `run-${seq}-${i}`,
      position: "p",
      eventType: type,
      correlationId: `c-${i}`,
    });
    expect(r.status).toBe(201);
    ids.push(r.body.wait.id);
  }
  const d = await h.post("/v1/deliver", { eventType: type, all: true });
  expect(d.body.delivered).toHaveLength(n);
  return ids;
}

/** Claims until the tenant's queue has handed out `n` continuations (dispatch is asynchronous). */
async function claimAll(tenant: Tenant, n: number, leaseMs = 30_000): Promise<Json[]> {
  const got: Json[] = [];
  const end = Date.now() + 15_000;
  while (got.length < n && Date.now() < end) {
    const r = await host(tenant).post("/v1/continuations/claim", {
      worker: "t",
      max: n - got.length,
      leaseMs,
      waitMs: 2000,
    });
    expect(r.status).toBe(200);
    got.push(...r.body.continuations);
  }
  expect(got).toHaveLength(n);
  return got;
}

const queue = (tenant: Tenant) => new Queue(`continuations.${tenant}`, { connection: redis, prefix: server.prefix });

describe("claim, ack, extend", () => {
  it("leases a continuation once, extends and acknowledges it; a gone lease is 409 lease_expired", async () => {
    const [id] = await resolved("acme", 1);
    const [lease] = await claimAll("acme", 1, 5000);
    const t0 = Date.now();
    expect(lease).toMatchObject({ waitId: id, attempt: 1, wait: { id, tenant: "acme", state: "resolved" } });
    expect(lease.leaseId).toMatch(/^[A-Za-z0-9._-]+$/);
    expect(Math.abs(Date.parse(lease.leaseExpiresAt) - (t0 + 5000))).toBeLessThan(1500);
    // leased: nobody else gets it
    const again = await host("acme").post("/v1/continuations/claim", { worker: "u" });
    expect(again.body.continuations).toEqual([]);

    const ext = await host("acme").post(`/v1/continuations/${lease.leaseId}/extend`, { leaseMs: 60_000 });
    expect(ext.status).toBe(200);
    expect(Date.parse(ext.body.leaseExpiresAt) - Date.now()).toBeGreaterThan(55_000);

    // another tenant's key, an unknown or malformed id: 409, nothing revealed, nothing changed
    for (const res of [
      await host("globex").post(`/v1/continuations/${lease.leaseId}/ack`),
      await host("globex").post(`/v1/continuations/${lease.leaseId}/extend`, {}),
      // the token's last hex digit changed (to one it is not)
      await host("acme").post(
        `/v1/continuations/${lease.leaseId.slice(0, -1)}${lease.leaseId.endsWith("0") ? "1" : "0"}/ack`,
      ),
      await host("acme").post("/v1/continuations/nonsense/ack"),
    ]) {
      const err = expectError(res, 409, "lease_expired");
      expect(JSON.stringify(err)).not.toContain(id);
    }

    const ack = await host("acme").post(`/v1/continuations/${lease.leaseId}/ack`);
    expect({ status: ack.status, body: ack.body }).toEqual({ status: 200, body: { acked: true } });
    expectError(await host("acme").post(`/v1/continuations/${lease.leaseId}/ack`), 409, "lease_expired");
    expectError(await host("acme").post(`/v1/continuations/${lease.leaseId}/extend`, {}), 409, "lease_expired");
    // acknowledged = completed and kept (24 h), not handed out again
    const q = queue("acme");
    expect(await q.getJobState(id as string)).toBe("completed");
    await q.close();
    const after = await host("acme").post("/v1/continuations/claim", { worker: "u", waitMs: 1500 });
    expect(after.body.continuations).toEqual([]);
  });

  it("the admin claims a named tenant's continuations; without ?tenant= it is 400", async () => {
    const [id] = await resolved("globex", 1);
    const admin = client(server.url, bearer(ADMIN));
    expectError(await admin.post("/v1/continuations/claim", { worker: "adm" }), 400, "invalid_request");
    let lease: Json;
    await until(async () => {
      const r = await admin.post("/v1/continuations/claim?tenant=globex", { worker: "adm", waitMs: 1000 });
      lease = r.body.continuations?.[0];
      return lease;
    });
    expect(lease.waitId).toBe(id);
    // a lease of globex is not acme's
    expectError(await admin.post(`/v1/continuations/${lease.leaseId}/ack?tenant=acme`), 409, "lease_expired");
    expect((await admin.post(`/v1/continuations/${lease.leaseId}/ack?tenant=globex`)).body).toEqual({ acked: true });
  });

  it("refuses bad claims with 400 and nothing leased", async () => {
    for (const body of [
      {},
      { worker: "w", max: 0 },
      { worker: "w", max: 101 },
      { worker: "w", leaseMs: 999 },
      { worker: "w", waitMs: 20_001 },
      { worker: "w", extra: 1 },
    ]) {
      expectError(await host("acme").post("/v1/continuations/claim", body), 400, "invalid_request");
    }
    expectError(
      await client(server.url, bearer("nope")).post("/v1/continuations/claim", { worker: "w" }),
      401,
      "unauthorized",
    );
  });
});

describe("consume in the claim, acks together", () => {
  it("a claim with consume: true consumes each leased wait for the claimer", async () => {
    const ids = await resolved("initech", 3);
    const got: Json[] = [];
    await until(async () => {
      const r = await host("initech").post("/v1/continuations/claim", {
        worker: "eater",
        max: 3,
        waitMs: 1000,
        consume: true,
      });
      expect(r.status).toBe(200);
      got.push(...r.body.continuations);
      return got.length >= 3;
    });
    expect(got.map((l) => l.waitId).sort()).toEqual([...ids].sort());
    for (const l of got) {
      expect(l).toMatchObject({
        attempt: 1,
        consumed: { first: true, consumption: { by: "eater" } },
        wait: { id: l.waitId, state: "resolved", consumption: { by: "eater" } },
      });
      const probe = await host("initech").post(`/v1/waits/${l.waitId}/consume`, { worker: "probe" });
      expect(probe.body).toMatchObject({ first: false, consumption: { by: "eater" } });
    }
    const acks = await host("initech").post("/v1/continuations/ack", { leaseIds: got.map((l) => l.leaseId) });
    expect(acks.body.acked.sort()).toEqual(got.map((l) => l.leaseId).sort());
  });

  it("POST /v1/continuations/ack acknowledges several leases; expired names the gone ones", async () => {
    await resolved("initech", 3);
    const leases = await claimAll("initech", 3);
    const [a, b, c] = leases.map((l) => l.leaseId as string);
    // another tenant acks nothing of initech's
    const foreign = await host("acme").post("/v1/continuations/ack", { leaseIds: [a] });
    expect(foreign.body).toEqual({ acked: [], expired: [a] });
    expect((await host("initech").post(`/v1/continuations/${a}/ack`)).body).toEqual({ acked: true });
    const r = await host("initech").post("/v1/continuations/ack", { leaseIds: [a, b, c, "nonsense"] });
    expect({ status: r.status, body: r.body }).toEqual({
      status: 200,
      body: { acked: [b, c], expired: [a, "nonsense"] },
    });
    const q = queue("initech");
    for (const l of leases) expect(await q.getJobState(l.waitId)).toBe("completed");
    await q.close();
    for (const body of [{}, { leaseIds: [] }, { leaseIds: Array(101).fill(a) }, { leaseIds: [a], x: 1 }]) {
      expectError(await host("initech").post("/v1/continuations/ack", body), 400, "invalid_request");
    }
  });
});

describe("bounds", () => {
  it("an unacknowledged lease comes back after its leaseMs, not before, with attempt 2", async () => {
    const [id] = await resolved("acme", 1);
    const [first] = await claimAll("acme", 1, 2000);
    const leasedAt = Date.now();
    let back: Json;
    while (!back) {
      const r = await host("acme").post("/v1/continuations/claim", { worker: "v", waitMs: 500 });
      back = r.body.continuations[0];
      if (!back) expect(Date.now() - leasedAt).toBeLessThan(6000);
    }
    const after = Date.now() - leasedAt;
    expect(back).toMatchObject({ waitId: id, attempt: 2 });
    expect(after).toBeGreaterThanOrEqual(1900);
    expect(after).toBeLessThan(4500); // lease + the 1 s expiry check + a poll
    expectError(await host("acme").post(`/v1/continuations/${first.leaseId}/ack`), 409, "lease_expired");
    expect((await host("acme").post(`/v1/continuations/${back.leaseId}/ack`)).body).toEqual({ acked: true });
  });

  it("a long poll on an empty queue answers [] after waitMs; one answers early when a continuation arrives", async () => {
    const t0 = Date.now();
    const empty = await host("globex").post("/v1/continuations/claim", { worker: "p", waitMs: 1500 });
    const took = Date.now() - t0;
    expect(empty.body).toEqual({ continuations: [] });
    expect(took).toBeGreaterThanOrEqual(1500);
    expect(took).toBeLessThan(3000);

    const t1 = Date.now();
    const polling = host("globex").post("/v1/continuations/claim", { worker: "p", waitMs: 15_000 });
    await sleep(500);
    const [id] = await resolved("globex", 1);
    const early = await polling;
    expect(early.body.continuations.map((c: Json) => c.waitId)).toEqual([id]);
    expect(Date.now() - t1).toBeLessThan(5000);
    await host("globex").post(`/v1/continuations/${early.body.continuations[0].leaseId}/ack`);
  });

  it("a waiting long poll takes from the queue again only when woken (no polling), and at once then", async () => {
    // the claims' fetches of initech's queue: BullMQ's moveToActive, which moves the next job of the wait list (RPOPLPUSH)
    // MONITOR on a socket of its own, read line by line (ioredis's monitor mode can take a
    // monitor line that comes in the same packet as MONITOR's reply for a reply and throw)
    const url = new URL(redisUrl());
    const mon = connect(Number(url.port), url.hostname);
    let fetches = 0;
    let buffered = "";
    mon.setEncoding("utf8");
    mon.on("data", (chunk: string) => {
      buffered += chunk;
      const lines = buffered.split("\r\n");
      buffered = lines.pop() ?? "";
      for (const line of lines) {
        if (/"RPOPLPUSH" "[^"]*:continuations\.initech:wait"/i.test(line)) fetches++;
      }
    });
    await new Promise<void>((resolve, reject) => {
      mon.once("error", reject);
      mon.write("MONITOR\r\n");
      mon.once("data", () => resolve());
    });
    try {
      const polling = host("initech").post("/v1/continuations/claim", { worker: "p", waitMs: 15_000 });
      await sleep(2500);
      // the first take, and one more if a wake-up came in between; a poll every ≤ 200 ms would be ≥ 12
      expect(fetches).toBeGreaterThanOrEqual(1);
      expect(fetches).toBeLessThanOrEqual(2);
      const [id] = await resolved("initech", 1);
      const woken = await polling;
      expect(woken.body.continuations.map((c: Json) => c.waitId)).toEqual([id]);
      await host("initech").post(`/v1/continuations/${woken.body.continuations[0].leaseId}/ack`);
    } finally {
      mon.destroy();
    }
  });
});

interface Line {
  worker: string;
  leased?: string;
  ran?: string;
  tenant?: string;
  ready?: boolean;
}

/** A child process running continuation-worker.child.ts; its JSON lines as they come. */
function childWorker(tenant: Tenant, name: string, consumeLimit: number) {
  const script = new URL("./continuation-worker.child.ts", import.meta.url).href;
  const tsconfig = fileURLToPath(new URL("../../../tsconfig.source.json", import.meta.url));
  const boot = `const { register } = await import("tsx/esm/api"); register({ tsconfig: ${JSON.stringify(tsconfig)} }); await import(${JSON.stringify(script)});`;
  const child: ChildProcess = spawn(process.execPath, ["--input-type=module", "-e", boot], {
    env: {
      ...process.env,
      RDV_URL: server.url,
      RDV_TOKEN: KEYS[tenant],
      RDV_NAME: name,
      RDV_LEASE_MS: "1500",
      RDV_CONSUME_LIMIT: String(consumeLimit),
    },
    stdio: ["ignore", "pipe", "inherit"],
    cwd: fileURLToPath(new URL(".", import.meta.url)),
  });
  const lines: Line[] = [];
  let buf = "";
  child.stdout?.on("data", (d: Buffer) => {
    buf += d.toString();
    let nl = buf.indexOf("\n");
    while (nl >= 0) {
      lines.push(JSON.parse(buf.slice(0, nl)));
      buf = buf.slice(nl + 1);
      nl = buf.indexOf("\n");
    }
  });
  const exited = new Promise((resolve) => child.once("exit", resolve));
  return { child, lines, exited };
}

describe("workers over HTTP", () => {
  it("two tenants, two workers each, one SIGKILLed holding leases: every continuation processed once, tenants apart", async () => {
    const N = 30;
    const tenants: Tenant[] = ["acme", "globex"];
    const children = tenants.map((t) => childWorker(t, `child-${t}`, 3));
    await until(async () => children.every((c) => c.lines.some((l) => l.ready)), 30_000);
    // earlier tests left completed jobs in these queues: this test's are counted above them
    const before = Object.fromEntries(
      await Promise.all(
        tenants.map(async (t) => {
          const q = queue(t);
          const { completed = 0 } = await q.getJobCounts("completed");
          await q.close();
          return [t, completed] as const;
        }),
      ),
    );
    const ids = Object.fromEntries(await Promise.all(tenants.map(async (t) => [t, await resolved(t, N)] as const)));

    // each child takes some leases, runs 3, then holds the rest unconsumed: kill it there
    // (after its 3 runs no consume of it is in flight: a kill cannot land mid-consume)
    await until(
      async () =>
        children.every((c) => c.lines.filter((l) => l.ran).length === 3 && c.lines.filter((l) => l.leased).length > 3),
      20_000,
    );
    const ran: Record<Tenant, Array<{ worker: string; id: string; tenant: string }>> = {
      acme: [],
      globex: [],
      initech: [],
    };
    const errors: unknown[] = [];
    const workers = tenants.map(
      (t) =>
        new ContinuationWorker({
          host: new HostClient({ baseUrl: server.url, token: KEYS[t] }),
          name: `local-${t}`,
          leaseMs: 1500,
          pollMs: 1000,
          onError: (err) => errors.push(err),
          handler: async ({ wait }: Continuation) => {
            ran[t].push({ worker: `local-${t}`, id: wait.id, tenant: wait.tenant });
          },
        }),
    );
    // the other worker of each tenant runs beside the child for a moment, then the child dies
    await sleep(200);
    for (const c of children) c.child.kill("SIGKILL");
    await Promise.all(children.map((c) => c.exited));

    try {
      for (const [i, t] of tenants.entries()) {
        const child = children[i] as ReturnType<typeof childWorker>;
        for (const l of child.lines) {
          expect(l.tenant ?? t).toBe(t); // a child only ever leased its own tenant's continuations
          if (l.ran) ran[t].push({ worker: l.worker, id: l.ran, tenant: l.tenant as string });
        }
        const heldByDead = child.lines.filter((l) => l.leased && !child.lines.some((r) => r.ran === l.leased));
        expect(heldByDead.length).toBeGreaterThan(0);
        // everything is acknowledged in the end: the dead child's leases came back to the other worker
        const q = queue(t);
        await until(
          async () =>
            ((await q.getJobCounts("completed")).completed ?? 0) >= (before[t] ?? 0) + N && ran[t].length >= N,
          30_000,
        );
        const counts = await q.getJobCounts("completed", "active", "wait", "failed");
        expect(counts).toMatchObject({ completed: (before[t] ?? 0) + N, active: 0, wait: 0, failed: 0 });
        for (const l of heldByDead)
          expect((await q.getJob(l.leased as string))?.attemptsStarted).toBeGreaterThanOrEqual(2);
        await q.close();

        // each wait ran exactly once, by its first (only) consumer, within its tenant
        const mine = ids[t] as string[];
        expect(ran[t].map((r) => r.id).sort()).toEqual([...mine].sort());
        expect(ran[t].every((r) => r.tenant === t)).toBe(true);
        for (const id of mine) {
          const probe = await host(t).post(`/v1/waits/${id}/consume`, { worker: "probe" });
          const by = ran[t].find((r) => r.id === id)?.worker;
          expect(probe.body).toMatchObject({ first: false, consumption: { by } });
        }
      }
      expect(errors).toEqual([]);
    } finally {
      await Promise.all(workers.map((w) => w.close()));
    }
  }, 90_000);

  it("a long poll is answered ([]) when the server drains on SIGTERM", async () => {
    const own = await startServer({ config: CONFIG });
    const t0 = Date.now();
    const polling = client(own.url, bearer(KEYS.acme)).post("/v1/continuations/claim", { worker: "d", waitMs: 15_000 });
    await sleep(500);
    const exit = own.proc.terminate();
    const r = await polling;
    expect({ status: r.status, body: r.body }).toEqual({ status: 200, body: { continuations: [] } });
    expect(Date.now() - t0).toBeLessThan(5000);
    expect((await exit).code).toBe(0);
  }, 40_000);
});
