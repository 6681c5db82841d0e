/**
 * Named continuation groups (docs/api.md, Continuations over HTTP) against a real
 * `rendezvous start` process: tenant acme routes `payment.*` to group `payments` and
 * `report.*` to group `reports`; globex has no groups.
 * - the dispatcher puts a grouped continuation on `continuations.acme.<group>` only, the rest
 *   on `continuations.acme`;
 * - a claim with `group` gets only its group's continuations, one without only the ungrouped
 *   ones, another tenant's claims none; grouped leases ack and extend; a grouped lease id is
 *   another tenant's `409 lease_expired`;
 * - an unknown (or malformed) group is `400 invalid_request` (issues path `group`);
 * - a ContinuationWorker with `group` (HTTP, and the BullMQ transport) runs exactly its group's;
 * - Bull Board lists the group queues; the console finds a grouped wait's job on its group's queue.
 */
import { type Continuation, ContinuationWorker, HostClient } from "@rendezvous/client";
import { BullmqContinuationWorker } from "@rendezvous/client/bullmq";
import { redisUrl } from "@rendezvous/testkit";
import { Queue } from "bullmq";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  bearer,
  client,
  expectError,
  expectIssues,
  type Json,
  type Started,
  sleep,
  startServer,
  until,
} from "./e2e-helpers.js";

const ADMIN = "adm_groups_test";
const KEYS = { acme: "hk_acme_groups", globex: "hk_globex_groups" } as const;
type Tenant = keyof typeof KEYS;
const CONFIG = {
  partitions: 4,
  adminToken: ADMIN,
  tenants: {
    acme: {
      hostKeys: [KEYS.acme],
      continuationGroups: { payments: { eventTypes: ["payment.*"] }, reports: { eventTypes: ["report.*"] } },
    },
    globex: { hostKeys: [KEYS.globex] },
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

/** Registers `n` waits of the type for the tenant and resolves them (deliver): their ids. */
async function resolved(tenant: Tenant, eventType: string, n: number): Promise<string[]> {
  const h = host(tenant);
  const ids: string[] = [];
  for (let i = 0; i < n; i++) {
    const r = await h.post("/v1/waits", {
      runId: `run-${++seq}`,
      position: "p",
      eventType,
      correlationId: `c-${seq}`,
    });
    expect(r.status).toBe(201);
    ids.push(r.body.wait.id);
  }
  const d = await h.post("/v1/deliver", { eventType, all: true });
  expect(d.body.delivered).toHaveLength(n);
  return ids;
}

/** Claims (with `group` when given) until nothing more comes for `quietMs`: every lease. */
async function claimUntilQuiet(tenant: Tenant, group: string | undefined, quietMs = 1500): Promise<Json[]> {
  const got: Json[] = [];
  for (;;) {
    const body: Json = { worker: "t", max: 100, waitMs: quietMs };
    if (group !== undefined) body.group = group;
    const r = await host(tenant).post("/v1/continuations/claim", body);
    expect(r.status).toBe(200);
    if (r.body.continuations.length === 0) return got;
    got.push(...r.body.continuations);
  }
}

const queue = (name: string) => new Queue(name, { connection: redis, prefix: server.prefix });

/** Waits until the dispatcher has put `n` jobs on the queue (waiting or active). */
async function queued(name: string, n: number): Promise<void> {
  const q = queue(name);
  try {
    await until(async () => {
      const c = await q.getJobCounts("wait", "active", "completed");
      return (c.wait ?? 0) + (c.active ?? 0) + (c.completed ?? 0) >= n;
    });
  } finally {
    await q.close();
  }
}

describe("claims by group", () => {
  it("a claim with group gets only its group's continuations; without, only the ungrouped; globex none", async () => {
    const pay = await resolved("acme", "payment.settled", 3);
    const rep = await resolved("acme", "report.daily", 2);
    const ship = await resolved("acme", "order.shipped", 2);
    const theirs = await resolved("globex", "payment.settled", 1);
    // all dispatched before anyone claims: a claim's answer below is everything on its queue
    await queued("continuations.acme.payments", 3);
    await queued("continuations.acme.reports", 2);
    await queued("continuations.acme", 2);
    await queued("continuations.globex", 1);

    // the BullMQ queues: each grouped continuation on its group's queue only (same job id, data)
    const qPay = queue("continuations.acme.payments");
    const qDefault = queue("continuations.acme");
    for (const id of pay) {
      expect((await qPay.getJob(id))?.data).toMatchObject({ id, tenant: "acme", eventType: "payment.settled" });
      expect(await qDefault.getJob(id)).toBeUndefined();
    }
    for (const id of ship) expect(await qPay.getJob(id)).toBeUndefined();
    await Promise.all([qPay.close(), qDefault.close()]);
    // the console finds a grouped continuation's job on its group's queue
    const job = await host("acme").get(`/console/api/waits/${pay[0]}/job`);
    expect(job.body).toMatchObject({ queue: "continuations.acme.payments", jobId: pay[0], job: { state: "waiting" } });
    const other = await host("acme").get(`/console/api/waits/${ship[0]}/job`);
    expect(other.body).toMatchObject({ queue: "continuations.acme", jobId: ship[0], job: { state: "waiting" } });

    const payments = await claimUntilQuiet("acme", "payments");
    const reports = await claimUntilQuiet("acme", "reports");
    const rest = await claimUntilQuiet("acme", undefined);
    const globex = await claimUntilQuiet("globex", undefined);
    expect(payments.map((l) => l.waitId).sort()).toEqual([...pay].sort());
    expect(reports.map((l) => l.waitId).sort()).toEqual([...rep].sort());
    expect(rest.map((l) => l.waitId).sort()).toEqual([...ship].sort());
    // globex has no groups: its payment.settled is on its one queue, exactly as without groups
    expect(globex.map((l) => l.waitId)).toEqual(theirs);
    for (const l of [...payments, ...reports, ...rest, ...globex]) expect(l.leaseId).toMatch(/^[A-Za-z0-9._-]+$/);

    // grouped leases: another tenant's key (and the admin naming another tenant) is 409, nothing changed
    const [first] = payments;
    for (const res of [
      await host("globex").post(`/v1/continuations/${first.leaseId}/ack`),
      await host("globex").post(`/v1/continuations/${first.leaseId}/extend`, {}),
      await client(server.url, bearer(ADMIN)).post(`/v1/continuations/${first.leaseId}/ack?tenant=globex`),
    ]) {
      expectError(res, 409, "lease_expired");
    }
    const ext = await host("acme").post(`/v1/continuations/${first.leaseId}/extend`, { leaseMs: 60_000 });
    expect(ext.status).toBe(200);
    expect(Date.parse(ext.body.leaseExpiresAt) - Date.now()).toBeGreaterThan(55_000);
    // the same lease id with another group of acme names no lease there
    const [jobPart, token] = first.leaseId.split(".");
    const otherGroup = `${jobPart}.${token}.${Buffer.from("reports").toString("base64url")}`;
    expectError(await host("acme").post(`/v1/continuations/${otherGroup}/ack`), 409, "lease_expired");
    const unknownGroup = `${jobPart}.${token}.${Buffer.from("nope").toString("base64url")}`;
    expectError(await host("acme").post(`/v1/continuations/${unknownGroup}/extend`, {}), 409, "lease_expired");
    // a group the tenant lacks opens no queue (no BullMQ worker, no keys): lease ids cannot make queues
    await sleep(1500); // past a lease check, which would write the queue's stalled-check key
    expect(await redis.keys(`${server.prefix}:continuations.acme.nope*`)).toEqual([]);

    for (const l of payments) {
      expect((await host("acme").post(`/v1/continuations/${l.leaseId}/ack`)).body).toEqual({ acked: true });
    }
    for (const [tenant, list] of [
      ["acme", [...reports, ...rest]],
      ["globex", globex],
    ] as const) {
      for (const l of list) expect((await host(tenant).post(`/v1/continuations/${l.leaseId}/ack`)).status).toBe(200);
    }
    const q = queue("continuations.acme.payments");
    for (const id of pay) expect(await q.getJobState(id)).toBe("completed");
    await q.close();
    expectError(await host("acme").post(`/v1/continuations/${first.leaseId}/ack`), 409, "lease_expired");
  });

  it("an unknown or malformed group is 400 invalid_request (issues path group), nothing leased", async () => {
    const [id] = await resolved("acme", "payment.unknown-group", 1);
    await queued("continuations.acme.payments", 1);
    const admin = client(server.url, bearer(ADMIN));
    for (const res of [
      await host("acme").post("/v1/continuations/claim", { worker: "t", group: "refunds" }),
      await host("acme").post("/v1/continuations/claim", { worker: "t", group: "pay ments" }),
      await host("acme").post("/v1/continuations/claim", { worker: "t", group: "" }),
      await host("acme").post("/v1/continuations/claim", { worker: "t", group: 7 }),
      // globex has no groups at all: acme's group is not globex's
      await host("globex").post("/v1/continuations/claim", { worker: "t", group: "payments" }),
      await admin.post("/v1/continuations/claim?tenant=globex", { worker: "t", group: "payments" }),
    ]) {
      const err = expectIssues(res, "invalid_request");
      // an unknown group: ["group"]; a malformed one is the body schema's ["body", "group"]
      expect(err.issues.map((i: Json) => i.path.at(-1))).toContain("group");
    }
    const unknown = await host("acme").post("/v1/continuations/claim", { worker: "t", group: "refunds" });
    expect(unknown.body.error.issues).toEqual([{ path: ["group"], message: "unknown group" }]);
    // nothing was leased: the continuation is still there for its group
    const [lease] = await claimUntilQuiet("acme", "payments");
    expect(lease?.waitId).toBe(id);
    expect((await host("acme").post(`/v1/continuations/${lease.leaseId}/ack`)).status).toBe(200);
  });
});

describe("Bull Board", () => {
  it("lists every tenant's default queue and each group's queue", async () => {
    const r = await client(server.url, bearer(ADMIN)).get("/admin/queues/api/queues");
    expect(r.status).toBe(200);
    const names = (r.body.queues as Array<{ name: string }>).map((q) => q.name);
    for (const name of ["continuations.acme", "continuations.acme.payments", "continuations.acme.reports"]) {
      expect(names).toContain(name);
    }
    expect(names).toContain("continuations.globex");
    expect(names.filter((n) => n.startsWith("continuations.globex."))).toEqual([]);
  });
});

describe("ContinuationWorker with a group", () => {
  it("over HTTP, a worker with group runs exactly its group's; one without, exactly the rest", async () => {
    const pay = await resolved("acme", "payment.worker", 4);
    const ship = await resolved("acme", "order.worker", 3);
    const ran: Record<string, string[]> = { payments: [], rest: [] };
    const errors: unknown[] = [];
    const worker = (name: keyof typeof ran, group?: string) =>
      new ContinuationWorker({
        host: new HostClient({ baseUrl: server.url, token: KEYS.acme }),
        name: `w-${name}`,
        group,
        leaseMs: 5000,
        pollMs: 500,
        onError: (err) => errors.push(err),
        handler: async ({ wait }: Continuation) => {
          ran[name]?.push(wait.id);
        },
      });
    const workers = [worker("payments", "payments"), worker("rest")];
    try {
      await until(async () => (ran.payments?.length ?? 0) >= 4 && (ran.rest?.length ?? 0) >= 3);
    } finally {
      await Promise.all(workers.map((w) => w.close()));
    }
    expect([...(ran.payments ?? [])].sort()).toEqual([...pay].sort());
    expect([...(ran.rest ?? [])].sort()).toEqual([...ship].sort());
    expect(errors).toEqual([]);
  });

  it("an HTTP worker with an unknown group reports 400 invalid_request and runs nothing", async () => {
    const errors: unknown[] = [];
    const w = new ContinuationWorker({
      host: new HostClient({ baseUrl: server.url, token: KEYS.acme }),
      name: "w-unknown",
      group: "refunds",
      pollMs: 200,
      onError: (err) => errors.push(err),
      handler: async () => {
        throw new Error("must not run");
      },
    });
    try {
      await until(async () => errors.length > 0);
    } finally {
      await w.close();
    }
    expect(errors[0]).toMatchObject({ status: 400, code: "invalid_request" });
  });

  it("over BullMQ, group names the group's queue: the worker runs exactly its group's", async () => {
    // The previous test's HTTP workers were closed with a long poll (pollMs 500) in flight; a
    // job such a poll leased as its client went away stays leased for that worker's 5 s (at
    // least once: the answer was lost). Let those polls end first, and use the group they
    // did not claim from.
    await sleep(1000);
    const grouped = await resolved("acme", "report.bullmq", 3);
    const ship = await resolved("acme", "order.bullmq", 1);
    const ran: string[] = [];
    const w = new BullmqContinuationWorker({
      tenant: "acme",
      group: "reports",
      host: new HostClient({ baseUrl: server.url, token: KEYS.acme }),
      name: "w-bullmq",
      connection: { url: redisUrl(), maxRetriesPerRequest: null },
      prefix: server.prefix,
      handler: async ({ wait }: Continuation) => {
        ran.push(wait.id);
      },
    });
    try {
      await until(async () => ran.length >= 3);
      // the ungrouped one is not the group worker's: it is still on the default queue for a claim
      const rest = await claimUntilQuiet("acme", undefined);
      expect(rest.map((l) => l.waitId)).toEqual(ship);
      for (const l of rest) await host("acme").post(`/v1/continuations/${l.leaseId}/ack`);
    } finally {
      await w.close();
    }
    expect([...ran].sort()).toEqual([...grouped].sort());
  });
});
