/**
 * Continuations over HTTP (docs/api.md): leases on the SAME BullMQ queue the dispatcher
 * fills (`continuations.<tenant>`, or `continuations.<tenant>.<group>` for a named group;
 * job id = wait id), taken with BullMQ's manual job processing, so a continuation goes to
 * one claimer at a time whichever transport takes it.
 *
 * - claim: `worker.getNextJob(token, {block: false})` moves a job to active with a lock
 *   keyed by a fresh random token; `extendJobLocks` then sets the lock to the claim's
 *   `leaseMs` (lockDuration is per worker; one extend per claim sets each lease's own).
 * - ack: `moveToCompleted(null, token, false)`, which checks the token: an expired or
 *   re-leased lock, or a job id not in the caller's tenant queue, fails → `lease_expired`.
 * - extend: `extendJobLocks` with the token (fails the same way).
 * - an expired lease: BullMQ's stalled check (every LEASE_CHECK_MS) moves an active job
 *   whose lock is gone back to wait; `maxStalledCount` is so high that it never fails one.
 *
 * A grouped lease names its group in the lease id; ack and extend take it from there, and a
 * group the caller's tenant does not have names no lease (`lease_expired`).
 *
 * One `Worker` (autorun off) per queue (tenant, group), created on first use, closed by `close()`. A long
 * poll polls with backoff (a Lua call that finds nothing is cheap) instead of holding a
 * blocking connection per request, and answers `[]` at once when the server drains.
 */
import { randomBytes } from "node:crypto";
import { type RedisLike, type Resources, withinCommandTimeout } from "@rendezvous/engine";
import { continuationQueueName, RendezvousError, type Wait, Wait as WaitSchema } from "@rendezvous/protocol";
import { Job, Worker } from "bullmq";
import { Counter, type Registry } from "prom-client";
import { z } from "zod";

/** How often a tenant's expired leases are looked for (BullMQ stalledInterval), ms. */
export const LEASE_CHECK_MS = 1000;
/** The lock a job gets when it moves to active, before the claim sets its lease, ms. */
const FETCH_LOCK_MS = 30_000;
/** A re-leased continuation is never failed for it (BullMQ fails past maxStalledCount). */
const NEVER_FAIL = 1_000_000_000;
/** Long-poll backoff between empty fetches, ms. */
const POLL_FIRST_MS = 20;
const POLL_MAX_MS = 200;

/** One leased continuation as a claim answers it (docs/api.md, Continuations over HTTP). */
export const ContinuationLease = z.object({
  leaseId: z.string(),
  waitId: z.string(),
  attempt: z.number().int(),
  leaseExpiresAt: z.string(),
  wait: WaitSchema,
});
export type Lease = z.infer<typeof ContinuationLease>;

export interface ClaimRequest {
  /** a named group of the tenant (checked by the caller); absent = the default queue */
  group?: string;
  max: number;
  leaseMs: number;
  waitMs: number;
}

const b64 = (s: string) => Buffer.from(s, "utf8").toString("base64url");

/**
 * `base64url(job id)` `.` hex token, then `.` `base64url(group)` for a grouped lease:
 * `[A-Za-z0-9._-]`, opaque to the caller.
 */
export function encodeLeaseId(jobId: string, token: string, group?: string): string {
  const base = `${b64(jobId)}.${token}`;
  return group === undefined ? base : `${base}.${b64(group)}`;
}

export interface DecodedLease {
  jobId: string;
  token: string;
  group?: string;
}

export function decodeLeaseId(leaseId: string): DecodedLease | null {
  const m = /^([A-Za-z0-9_-]{1,300})\.([0-9a-f]{32})(?:\.([A-Za-z0-9_-]{1,88}))?$/.exec(leaseId);
  if (!m) return null;
  const jobId = Buffer.from(m[1] as string, "base64url").toString("utf8");
  // job ids are wait ids: anything else names no job (and never another key of the queue)
  if (!/^[A-Za-z0-9._-]{1,200}$/.test(jobId)) return null;
  if (m[3] === undefined) return { jobId, token: m[2] as string };
  const group = Buffer.from(m[3], "base64url").toString("utf8");
  return /^[A-Za-z0-9._-]{1,64}$/.test(group) ? { jobId, token: m[2] as string, group } : null;
}

function counter(registry: Registry, name: string, help: string): Counter<"tenant"> {
  const existing = registry.getSingleMetric(name);
  if (existing) return existing as Counter<"tenant">;
  return new Counter({ name, help, labelNames: ["tenant"], registers: [registry] });
}

export class ContinuationClaims {
  readonly #res: Resources;
  readonly #workers = new Map<string, Worker<Wait>>();
  #conn: RedisLike | undefined;
  #closing = false;
  /** long polls in progress: woken (to answer `[]`) when the server drains */
  readonly #sleepers = new Set<() => void>();
  readonly #claimed: Counter<"tenant">;
  readonly #acked: Counter<"tenant">;
  readonly #expired: Counter<"tenant">;

  constructor(res: Resources) {
    this.#res = res;
    const registry = res.metrics.registry;
    this.#claimed = counter(registry, "rendezvous_continuation_leases_total", "Continuations leased over HTTP");
    this.#acked = counter(registry, "rendezvous_continuation_acks_total", "Continuation leases acknowledged");
    this.#expired = counter(
      registry,
      "rendezvous_continuation_leases_expired_total",
      "Continuations handed out again after their lease (or a worker's lock) expired",
    );
  }

  /** Whether the tenant's config has this group. */
  hasGroup(tenant: string, group: string): boolean {
    const groups = this.#res.config.tenants[tenant]?.continuationGroups;
    return groups !== undefined && Object.hasOwn(groups, group);
  }

  #worker(tenant: string, group: string | undefined): Worker<Wait> {
    const queue = continuationQueueName(tenant, group);
    let w = this.#workers.get(queue);
    if (w) return w;
    if (this.#closing) throw new RendezvousError("unavailable", "shutting down");
    // one command connection shared by every tenant's worker (each adds its own blocking one,
    // which a claim never blocks on)
    this.#conn ??= this.#res.connect("continuation-claims", { blocking: true });
    w = new Worker<Wait>(queue, null, {
      connection: this.#conn,
      prefix: this.#res.queuePrefix,
      autorun: false,
      lockDuration: FETCH_LOCK_MS,
      stalledInterval: LEASE_CHECK_MS,
      maxStalledCount: NEVER_FAIL,
      name: "http-claims",
    });
    w.on("error", (err) => this.#res.logger.warn({ err, tenant, group }, "continuation claims: worker error"));
    w.on("stalled", () => this.#expired.inc({ tenant }));
    void w.startStalledCheckTimer();
    this.#workers.set(queue, w);
    return w;
  }

  #bounded<T>(p: Promise<T>): Promise<T> {
    return withinCommandTimeout(this.#res.commandTimeoutMs, p);
  }

  /** Up to `max` leases of the tenant's continuations; a long poll waits up to `waitMs` for one. */
  async claim(tenant: string, req: ClaimRequest, gone: () => boolean = () => false): Promise<Lease[]> {
    const worker = this.#worker(tenant, req.group);
    const until = Date.now() + req.waitMs;
    let pause = POLL_FIRST_MS;
    for (;;) {
      const leases = await this.#take(tenant, worker, req);
      if (leases.length > 0 || this.#closing || gone()) return leases;
      const left = until - Date.now();
      if (left <= 0) return [];
      await this.#sleep(Math.min(pause, left));
      pause = Math.min(pause * 2, POLL_MAX_MS);
    }
  }

  async #take(tenant: string, worker: Worker<Wait>, req: ClaimRequest): Promise<Lease[]> {
    const jobs: Array<{ job: Job<Wait>; token: string }> = [];
    while (jobs.length < req.max && !this.#closing) {
      const token = randomBytes(16).toString("hex");
      const job = await this.#bounded(worker.getNextJob(token, { block: false }));
      if (!job?.id) break;
      jobs.push({ job, token });
    }
    if (jobs.length === 0) return [];
    const at = Date.now() + req.leaseMs;
    const failed = new Set(
      await this.#bounded(
        worker.extendJobLocks(
          jobs.map((j) => j.job.id as string),
          jobs.map((j) => j.token),
          req.leaseMs,
        ),
      ),
    );
    const leases = jobs
      .filter((j) => !failed.has(j.job.id as string))
      .map(({ job, token }) => ({
        leaseId: encodeLeaseId(job.id as string, token, req.group),
        waitId: job.id as string,
        attempt: Math.max(1, job.attemptsStarted),
        leaseExpiresAt: new Date(at).toISOString(),
        wait: job.data,
      }));
    this.#claimed.inc({ tenant }, leases.length);
    return leases;
  }

  /** The lease a lease id names in the tenant's queues; a group the tenant lacks names none. */
  #lease(tenant: string, leaseId: string): DecodedLease {
    const lease = decodeLeaseId(leaseId);
    if (!lease || (lease.group !== undefined && !this.hasGroup(tenant, lease.group))) {
      throw new RendezvousError("lease_expired");
    }
    return lease;
  }

  /** Acknowledges a lease: the continuation is done. */
  async ack(tenant: string, leaseId: string): Promise<void> {
    const lease = this.#lease(tenant, leaseId);
    const worker = this.#worker(tenant, lease.group);
    // the job's own options (removeOnComplete: kept 24 h) come with it
    const job = await this.#bounded(Job.fromId<Wait>(worker, lease.jobId));
    if (!job) throw new RendezvousError("lease_expired");
    try {
      await this.#bounded(job.moveToCompleted(null, lease.token, false));
    } catch (err) {
      if (err instanceof RendezvousError) throw err;
      // a BullMQ script code (missing lock, lock mismatch, not active): the lease is gone
      if (typeof (err as { code?: unknown }).code === "number") throw new RendezvousError("lease_expired");
      throw err;
    }
    this.#acked.inc({ tenant });
  }

  /** Extends a lease to `leaseMs` from now; the new expiry. */
  async extend(tenant: string, leaseId: string, leaseMs: number): Promise<string> {
    const lease = this.#lease(tenant, leaseId);
    const worker = this.#worker(tenant, lease.group);
    const at = Date.now() + leaseMs;
    const failed = await this.#bounded(worker.extendJobLocks([lease.jobId], [lease.token], leaseMs));
    if (failed.length > 0) throw new RendezvousError("lease_expired");
    return new Date(at).toISOString();
  }

  #sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const wake = () => {
        clearTimeout(timer);
        this.#sleepers.delete(wake);
        resolve();
      };
      const timer = setTimeout(wake, ms);
      this.#sleepers.add(wake);
    });
  }

  /** The server drains: long polls answer with what they have (`[]`), no new worker starts. */
  drain(): void {
    this.#closing = true;
    for (const wake of [...this.#sleepers]) wake();
  }

  async close(): Promise<void> {
    this.drain();
    const workers = [...this.#workers.values()];
    this.#workers.clear();
    await Promise.all(workers.map((w) => w.close().catch(() => undefined)));
  }
}
