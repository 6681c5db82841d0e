/**
 * `rendezvous_queue_jobs{queue,state}`: the jobs of each BullMQ queue of the deployment (the
 * continuation queues of every tenant and group, `timeouts`, `webhooks`) by state, read from
 * the queues' own keys: one pipelined round trip of 8 O(1) commands per queue (every queue
 * of a deployment shares one slot on a cluster: see queuePrefixFor), and
 * `rendezvous_queue_oldest_waiting_age_seconds{queue}` from a second one (an HGET per queue
 * with a waiting job). Read at most once a second however often /metrics is scraped;
 * scrapes meanwhile share the last read, and so does the console's overview ({@link queueSampler}).
 */
import type { Resources } from "@rendezvous/engine";
import { Gauge } from "prom-client";

export const QUEUE_STATES = ["waiting", "active", "delayed", "completed", "failed"] as const;
export type QueueState = (typeof QUEUE_STATES)[number];
export type QueueCounts = Record<QueueState, number>;

/** Reads at most this often (ms); a scrape within it is answered from the last read. */
export const QUEUE_SAMPLE_MS = 1000;

// waiting = wait + prioritized + paused (what no worker holds yet); each key's length command
const READS: Array<{ suffix: string; state: QueueState; list: boolean }> = [
  { suffix: "wait", state: "waiting", list: true },
  { suffix: "prioritized", state: "waiting", list: false },
  { suffix: "paused", state: "waiting", list: true },
  { suffix: "active", state: "active", list: true },
  { suffix: "delayed", state: "delayed", list: false },
  { suffix: "completed", state: "completed", list: false },
  { suffix: "failed", state: "failed", list: false },
];

export interface QueueSample {
  counts: QueueCounts;
  /** when the oldest job of the wait list was added (ms since the epoch), null when the list is empty */
  oldestWaitingAt: number | null;
}

/**
 * Every queue's counts in one pipelined round trip (a failed command counts 0), and the
 * oldest waiting job's creation time in a second one, for the queues that have one (BullMQ
 * pushes new jobs on the left of the wait list and workers take from the right).
 */
export async function readQueueCounts(res: Resources, queues: readonly string[]): Promise<Map<string, QueueSample>> {
  const per = READS.length + 1;
  const pl = res.redis.pipeline();
  for (const queue of queues) {
    const base = `${res.queuePrefix}:${queue}:`;
    for (const r of READS) {
      if (r.list) pl.llen(base + r.suffix);
      else pl.zcard(base + r.suffix);
    }
    pl.lindex(`${base}wait`, -1);
  }
  const replies = (await pl.exec()) ?? [];
  const out = new Map<string, QueueSample>();
  const oldest: Array<{ queue: string; jobId: string }> = [];
  queues.forEach((queue, q) => {
    const counts: QueueCounts = { waiting: 0, active: 0, delayed: 0, completed: 0, failed: 0 };
    READS.forEach((r, i) => {
      const [err, n] = replies[q * per + i] ?? [null, 0];
      if (!err) counts[r.state] += Number(n ?? 0);
    });
    out.set(queue, { counts, oldestWaitingAt: null });
    const [err, jobId] = replies[q * per + READS.length] ?? [null, null];
    if (!err && typeof jobId === "string") oldest.push({ queue, jobId });
  });
  if (oldest.length > 0) {
    const ages = res.redis.pipeline();
    for (const o of oldest) ages.hget(`${res.queuePrefix}:${o.queue}:${o.jobId}`, "timestamp");
    const times = (await ages.exec()) ?? [];
    oldest.forEach((o, i) => {
      const [err, t] = times[i] ?? [null, null];
      const at = Number(t);
      if (!err && t !== null && Number.isFinite(at)) (out.get(o.queue) as QueueSample).oldestWaitingAt = at;
    });
  }
  return out;
}

/** One read of every queue, and when it was taken (ms since the epoch). */
export interface QueueRead {
  at: number;
  samples: Map<string, QueueSample>;
}

/** The last read, or a new one when it is a second old; null when Redis is down or the read failed. */
export type QueueSampler = () => Promise<QueueRead | null>;

/**
 * The queues a process shows: a fixed list, or a function giving them now (the continuation
 * queues of the tenants the registry holds, which change at run time).
 */
export type QueueNames = readonly string[] | (() => readonly string[]);

/** The queue names as they are now. */
export function currentQueueNames(queues: QueueNames): readonly string[] {
  return typeof queues === "function" ? queues() : queues;
}

/** Whether `queues` can ever name a queue (a fixed empty list cannot). */
export function namesAnyQueue(queues: QueueNames): boolean {
  return typeof queues === "function" || queues.length > 0;
}

const samplers = new WeakMap<object, QueueSampler>();
const installed = new WeakSet<object>();

/**
 * The process's read of `queues` (one per registry: the first caller's queue list), shared by
 * the gauges and the console's overview, so that neither makes more than a read a second.
 */
export function queueSampler(res: Resources, queues: QueueNames, now = Date.now): QueueSampler {
  const registry = res.metrics.registry;
  const known = samplers.get(registry);
  if (known) return known;
  let last: { at: number; read: Promise<Map<string, QueueSample>> } | undefined;
  const sample: QueueSampler = async () => {
    if (res.redis.status !== "ready") return null; // keep the last values rather than hang the scrape
    const t = now();
    if (!last || t - last.at >= QUEUE_SAMPLE_MS) {
      const read = readQueueCounts(res, currentQueueNames(queues));
      last = { at: t, read };
      read.catch(() => {
        if (last?.read === read) last = undefined; // the next scrape reads again
      });
    }
    try {
      return { at: t, samples: await last.read };
    } catch {
      return null; // keep the last values
    }
  };
  samplers.set(registry, sample);
  return sample;
}

/** Registers the gauge on the resources' registry (once per registry). */
export function installQueueGauges(res: Resources, queues: QueueNames, now = Date.now): void {
  const registry = res.metrics.registry;
  if (!namesAnyQueue(queues) || installed.has(registry)) return;
  installed.add(registry);
  const sample = queueSampler(res, queues, now);
  // both collect from one read (prom-client collects the metrics of a scrape concurrently)
  new Gauge({
    name: "rendezvous_queue_jobs",
    help: "Jobs of each BullMQ queue (continuations.<tenant>[.<group>], timeouts, webhooks) by state",
    labelNames: ["queue", "state"],
    registers: [registry],
    async collect() {
      const read = await sample();
      for (const [queue, s] of read?.samples ?? []) {
        for (const state of QUEUE_STATES) this.set({ queue, state }, s.counts[state]);
      }
    },
  });
  new Gauge({
    name: "rendezvous_queue_oldest_waiting_age_seconds",
    help: "Age of the oldest job of each BullMQ queue's wait list (0 when none waits)",
    labelNames: ["queue"],
    registers: [registry],
    async collect() {
      const read = await sample();
      if (!read) return;
      for (const [queue, s] of read.samples) {
        this.set({ queue }, s.oldestWaitingAt === null ? 0 : Math.max(0, read.at - s.oldestWaitingAt) / 1000);
      }
    },
  });
}
