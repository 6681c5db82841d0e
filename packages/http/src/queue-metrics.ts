/**
 * `rendezvous_queue_jobs{queue,state}`: the jobs of each BullMQ queue of the deployment (the
 * continuation queues of every tenant and group, `timeouts`, `webhooks`) by state, read from
 * the queues' own keys: one pipelined round trip of 7 O(1) commands per queue (every queue
 * of a deployment shares one slot on a cluster: see queuePrefixFor). Read at most once a
 * second however often /metrics is scraped; scrapes meanwhile share the last read.
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

/** One pipelined read of every queue's counts (a failed command counts 0). */
export async function readQueueCounts(res: Resources, queues: readonly string[]): Promise<Map<string, QueueCounts>> {
  const pl = res.redis.pipeline();
  for (const queue of queues) {
    const base = `${res.queuePrefix}:${queue}:`;
    for (const r of READS) {
      if (r.list) pl.llen(base + r.suffix);
      else pl.zcard(base + r.suffix);
    }
  }
  const replies = (await pl.exec()) ?? [];
  const out = new Map<string, QueueCounts>();
  queues.forEach((queue, q) => {
    const counts: QueueCounts = { waiting: 0, active: 0, delayed: 0, completed: 0, failed: 0 };
    READS.forEach((r, i) => {
      const [err, n] = replies[q * READS.length + i] ?? [null, 0];
      if (!err) counts[r.state] += Number(n ?? 0);
    });
    out.set(queue, counts);
  });
  return out;
}

const installed = new WeakSet<object>();

/** Registers the gauge on the resources' registry (once per registry). */
export function installQueueGauges(res: Resources, queues: readonly string[], now = Date.now): void {
  const registry = res.metrics.registry;
  if (queues.length === 0 || installed.has(registry)) return;
  installed.add(registry);
  let last: { at: number; read: Promise<Map<string, QueueCounts>> } | undefined;
  new Gauge({
    name: "rendezvous_queue_jobs",
    help: "Jobs of each BullMQ queue (continuations.<tenant>[.<group>], timeouts, webhooks) by state",
    labelNames: ["queue", "state"],
    registers: [registry],
    async collect() {
      if (res.redis.status !== "ready") return; // keep the last values rather than hang the scrape
      const t = now();
      if (!last || t - last.at >= QUEUE_SAMPLE_MS) {
        const read = readQueueCounts(res, queues);
        last = { at: t, read };
        read.catch(() => {
          if (last?.read === read) last = undefined; // the next scrape reads again
        });
      }
      let counts: Map<string, QueueCounts>;
      try {
        counts = await last.read;
      } catch {
        return; // keep the last values
      }
      for (const [queue, c] of counts) {
        for (const state of QUEUE_STATES) this.set({ queue, state }, c[state]);
      }
    },
  });
}
