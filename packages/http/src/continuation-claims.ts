/**
 * Continuations over HTTP (docs/api.md): leases on the SAME BullMQ queue the dispatcher
 * fills (`continuations.<tenant>`, or `continuations.<tenant>.<group>` for a named group;
 * job id = wait id), taken with BullMQ's manual job processing, so a continuation goes to
 * one claimer at a time whichever transport takes it.
 *
 * - claim: `worker.getNextJob(token, {block: false})` moves a job to active with a lock
 *   keyed by a fresh random token, for the worker's lockDuration (FETCH_LOCK_MS, the default
 *   `leaseMs`); a claim with another `leaseMs` then sets it with one `extendJobLocks`.
 * - ack: `moveToCompleted(null, token, false)`, which checks the token: an expired or
 *   re-leased lock, or a job id not in the caller's tenant queue, fails → `lease_expired`.
 * - extend: `extendJobLocks` with the token (fails the same way).
 * - an expired lease: BullMQ's stalled check (every LEASE_CHECK_MS) moves an active job
 *   whose lock is gone back to wait; `maxStalledCount` is so high that it never fails one.
 *
 * A grouped lease names its group in the lease id; ack and extend take it from there, and a
 * group the caller's tenant does not have names no lease (`lease_expired`).
 *
 * One `Worker` (autorun off) per queue (tenant, group), created on first use, closed by `close()`.
 * A long poll that found nothing waits for BullMQ's own wake-up: the queue's marker key, which
 * every script that makes a job waiting (add, a stalled lease moved back) sets. While long polls
 * wait on a queue, ONE loop per queue blocks on the marker (`backend.waitForJob`, the worker's
 * own blocking connection) and wakes every waiting poll of the queue, which then takes again;
 * the loop stops when none waits. A wake-up generation counter closes the gap between a take
 * that found nothing and the poll starting to wait. The block ends every WAKE_BLOCK_S at most
 * (the polls take again then, as a BullMQ worker does), and a poll answers `[]` at its
 * deadline, when its client goes, and at once when the server drains.
 */
import { randomBytes } from "node:crypto";
import {
  type RedisLike,
  type Resources,
  type TraceCarrier,
  traceCarrierOf,
  traceOfBullmqMetadata,
  withinCommandTimeout,
} from "@rendezvous/engine";
import {
  Consumption,
  continuationQueueName,
  RendezvousError,
  type Wait,
  Wait as WaitSchema,
} from "@rendezvous/protocol";
import { Job, Worker } from "bullmq";
import { Counter, type Registry } from "prom-client";
import { z } from "zod";
import { consumeSpan } from "./request-tracing.js";

/** How often a tenant's expired leases are looked for (BullMQ stalledInterval), ms. */
export const LEASE_CHECK_MS = 1000;
/** The lock a job gets when it moves to active, before the claim sets its lease, ms. */
const FETCH_LOCK_MS = 30_000;
/** A re-leased continuation is never failed for it (BullMQ fails past maxStalledCount). */
const NEVER_FAIL = 1_000_000_000;
/** The longest block on a queue's marker, s (then the waiting polls take again). */
const WAKE_BLOCK_S = 5;
/** After a failed block (Redis trouble), before blocking again, ms. */
const WAKE_RETRY_MS = 200;

/** One leased continuation as a claim answers it (docs/api.md, Continuations over HTTP). */
export const ContinuationLease = z.object({
  leaseId: z.string(),
  waitId: z.string(),
  attempt: z.number().int(),
  leaseExpiresAt: z.string(),
  wait: WaitSchema,
  /** with `consume: true`: the consume done for the claimer (`wait` is then the wait as consumed) */
  consumed: z.object({ first: z.boolean(), consumption: Consumption }).optional(),
  /** the continuation's trace context (docs/api.md, Tracing), when it has one */
  traceparent: z.string().optional(),
  tracestate: z.string().optional(),
});
export type Lease = z.infer<typeof ContinuationLease>;

export interface ClaimRequest {
  /** a named group of the tenant (checked by the caller); absent = the default queue */
  group?: string;
  max: number;
  leaseMs: number;
  waitMs: number;
  /** consume each leased wait as this worker before answering */
  consumeAs?: string;
  /** the claim request's trace context: linked from the consume spans */
  trace?: TraceCarrier;
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

/** A queue's claim worker and the long polls waiting on it. */
interface ClaimQueue {
  worker: Worker<Wait>;
  /** wake-ups so far: a poll whose take began before the latest one takes again */
  wakes: number;
  /** the waiting polls of this queue */
  waiters: Set<() => void>;
  /** whether the marker loop runs */
  watching: boolean;
}

export class ContinuationClaims {
  readonly #res: Resources;
  readonly #queues = new Map<string, ClaimQueue>();
  #conn: RedisLike | undefined;
  #closing = false;
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

  #queue(tenant: string, group: string | undefined): ClaimQueue {
    const queue = continuationQueueName(tenant, group);
    const known = this.#queues.get(queue);
    if (known) return known;
    if (this.#closing) throw new RendezvousError("unavailable", "shutting down");
    // one command connection shared by every tenant's worker (each adds its own blocking one:
    // the queue's marker loop)
    this.#conn ??= this.#res.connect("continuation-claims", { blocking: true });
    const w = new Worker<Wait>(queue, null, {
      connection: this.#conn,
      prefix: this.#res.queuePrefix,
      autorun: false,
      lockDuration: FETCH_LOCK_MS,
      stalledInterval: LEASE_CHECK_MS,
      maxStalledCount: NEVER_FAIL,
      drainDelay: WAKE_BLOCK_S,
      name: "http-claims",
    });
    w.on("error", (err) => this.#res.logger.warn({ err, tenant, group }, "continuation claims: worker error"));
    w.on("stalled", () => this.#expired.inc({ tenant }));
    void w.startStalledCheckTimer();
    const q: ClaimQueue = { worker: w, wakes: 0, waiters: new Set(), watching: false };
    this.#queues.set(queue, q);
    return q;
  }

  /** Blocks on the queue's marker while polls wait; each return wakes them all. */
  async #watch(q: ClaimQueue): Promise<void> {
    if (q.watching) return;
    q.watching = true;
    try {
      while (!this.#closing && q.waiters.size > 0) {
        try {
          await q.worker.backend.waitForJob(WAKE_BLOCK_S);
        } catch (err) {
          if (this.#closing) break;
          this.#res.logger.warn({ err, queue: q.worker.name }, "continuation claims: marker wait failed");
          await new Promise((resolve) => setTimeout(resolve, WAKE_RETRY_MS));
        }
        q.wakes++;
        for (const wake of [...q.waiters]) wake();
      }
    } finally {
      q.watching = false;
    }
  }

  /** Until the queue's next wake-up, `ms`, the client going, or the drain. */
  #wait(q: ClaimQueue, ms: number, signal: AbortSignal | undefined): Promise<void> {
    return new Promise((resolve) => {
      const wake = () => {
        clearTimeout(timer);
        q.waiters.delete(wake);
        signal?.removeEventListener("abort", wake);
        resolve();
      };
      const timer = setTimeout(wake, ms);
      q.waiters.add(wake);
      signal?.addEventListener("abort", wake, { once: true });
      void this.#watch(q);
    });
  }

  #bounded<T>(p: Promise<T>): Promise<T> {
    return withinCommandTimeout(this.#res.commandTimeoutMs, p);
  }

  /**
   * Up to `max` leases of the tenant's continuations; a long poll waits up to `waitMs` for one.
   * `gone` aborts when the client went: it takes nothing more.
   */
  async claim(tenant: string, req: ClaimRequest, gone?: AbortSignal): Promise<Lease[]> {
    const q = this.#queue(tenant, req.group);
    const until = Date.now() + req.waitMs;
    for (;;) {
      const wakes = q.wakes;
      const leases = await this.#take(tenant, q.worker, req);
      if (leases.length > 0) {
        return req.consumeAs === undefined ? leases : this.#consume(tenant, leases, req.consumeAs, req.trace);
      }
      if (this.#closing || gone?.aborted) return leases;
      const left = until - Date.now();
      if (left <= 0) return [];
      // a wake-up during the take may be for a job it missed: take again at once
      if (q.wakes === wakes) await this.#wait(q, left, gone);
      if (this.#closing || gone?.aborted) return [];
    }
  }

  async #take(tenant: string, worker: Worker<Wait>, req: ClaimRequest): Promise<Lease[]> {
    const fetch = (token: string) => worker.getNextJob(token, { block: false });
    // taken before the fetch: a lock BullMQ sets at the fetch lasts at least until then
    const at = Date.now() + req.leaseMs;
    const jobs: Array<{ job: Job<Wait>; token: string }> = [];
    const keep = (got: Array<Job<Wait> | undefined>, tokens: string[]) =>
      got.forEach((job, i) => {
        if (job?.id) jobs.push({ job, token: tokens[i] as string });
      });
    // one fetch, and beside it how many wait: the others in one more round trip of fetches sent
    // together, none when nothing else waits. LLEN goes out first (getNextJob sends after a few
    // awaits), so it counts the fetched job: one fewer (if not, one is left for the next claim)
    const first = [randomBytes(16).toString("hex")];
    const [got, waiting] = await this.#bounded(
      Promise.all([fetch(first[0] as string), this.#conn?.llen(worker.toKey("wait")) ?? 0]),
    );
    keep([got], first);
    const more = Math.min(req.max - jobs.length, waiting - jobs.length);
    if (jobs.length > 0 && more > 0 && !this.#closing) {
      const tokens = Array.from({ length: more }, () => randomBytes(16).toString("hex"));
      keep(await this.#bounded(Promise.all(tokens.map(fetch))), tokens);
    }
    if (jobs.length === 0) return [];
    // the fetch locked each job for FETCH_LOCK_MS: another lease length is set here
    const failed = new Set(
      req.leaseMs === FETCH_LOCK_MS
        ? []
        : await this.#bounded(
            worker.extendJobLocks(
              jobs.map((j) => j.job.id as string),
              jobs.map((j) => j.token),
              req.leaseMs,
            ),
          ),
    );
    const leases = jobs
      .filter((j) => !failed.has(j.job.id as string))
      .map(({ job, token }): Lease => {
        const lease: Lease = {
          leaseId: encodeLeaseId(job.id as string, token, req.group),
          waitId: job.id as string,
          attempt: Math.max(1, job.attemptsStarted),
          leaseExpiresAt: new Date(at).toISOString(),
          wait: job.data,
        };
        // the job's context, as the dispatcher wrote it (BullMQ's telemetry metadata)
        const trace = traceOfBullmqMetadata(job.opts.telemetry?.metadata);
        if (trace) lease.traceparent = trace.traceparent;
        if (trace?.tracestate) lease.tracestate = trace.tracestate;
        return lease;
      });
    this.#claimed.inc({ tenant }, leases.length);
    return leases;
  }

  /** Each lease's wait consumed as `worker` (together, one round trip); a failed consume leaves its lease as is. */
  #consume(tenant: string, leases: Lease[], worker: string, claim?: TraceCarrier): Promise<Lease[]> {
    return Promise.all(
      leases.map(async (lease) => {
        // each consume in the lease's trace, linked to the claim request
        const parent = lease.traceparent ? traceCarrierOf(lease.traceparent, lease.tracestate) : undefined;
        const span = consumeSpan(this.#res.tracing, parent, tenant, lease.waitId, [claim]);
        try {
          const c = await this.#res.store.consume(tenant, lease.waitId, worker);
          span?.setAttributes({ "rendezvous.consume.first": c.first });
          return { ...lease, wait: c.wait, consumed: { first: c.first, consumption: c.consumption } };
        } catch (err) {
          span?.fail(err);
          this.#res.logger.debug({ err, waitId: lease.waitId }, "continuation claims: consume in the claim failed");
          return lease;
        } finally {
          span?.end();
        }
      }),
    );
  }

  /** The lease a lease id names in the tenant's queues; a group the tenant lacks names none. */
  #lease(tenant: string, leaseId: string): DecodedLease {
    const lease = decodeLeaseId(leaseId);
    if (!lease || (lease.group !== undefined && !this.hasGroup(tenant, lease.group))) {
      throw new RendezvousError("lease_expired");
    }
    return lease;
  }

  /** Acknowledges several leases together (one round trip per step); which were done, which had expired. */
  async ackMany(tenant: string, leaseIds: string[]): Promise<{ acked: string[]; expired: string[] }> {
    const done = await Promise.all(
      leaseIds.map((id) =>
        this.ack(tenant, id).then(
          () => true,
          (err: unknown) => {
            if (err instanceof RendezvousError && err.code === "lease_expired") return false;
            throw err;
          },
        ),
      ),
    );
    return { acked: leaseIds.filter((_, i) => done[i]), expired: leaseIds.filter((_, i) => !done[i]) };
  }

  /** Acknowledges a lease: the continuation is done. */
  async ack(tenant: string, leaseId: string): Promise<void> {
    const lease = this.#lease(tenant, leaseId);
    const worker = this.#queue(tenant, lease.group).worker;
    // the job's own options (removeOnComplete: kept continuationRetentionMs) come with it
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
    const worker = this.#queue(tenant, lease.group).worker;
    const at = Date.now() + leaseMs;
    const failed = await this.#bounded(worker.extendJobLocks([lease.jobId], [lease.token], leaseMs));
    if (failed.length > 0) throw new RendezvousError("lease_expired");
    return new Date(at).toISOString();
  }

  /** The server drains: long polls answer with what they have (`[]`), no new worker starts. */
  drain(): void {
    this.#closing = true;
    for (const q of this.#queues.values()) for (const wake of [...q.waiters]) wake();
  }

  async close(): Promise<void> {
    this.drain();
    const workers = [...this.#queues.values()].map((q) => q.worker);
    this.#queues.clear();
    // force: a marker loop's block is dropped, not waited for (no processor runs here)
    await Promise.all(workers.map((w) => w.close(true).catch(() => undefined)));
  }
}
