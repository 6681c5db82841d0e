/**
 * The overview's operator figures beside the waits and events (docs/console.md, the overview's
 * `http` and `queues`): the HTTP error rate of this api process, from its request counter
 * (console-stats.ts), and the depths of the deployment's BullMQ queues, from the read the
 * `/metrics` queue gauges make (queue-metrics.ts, at most once a second).
 */
import type { Resources } from "@rendezvous/engine";
import { continuationQueueName } from "@rendezvous/protocol";
import { z } from "zod";
import {
  currentQueueNames,
  namesAnyQueue,
  type QueueNames,
  type QueueSample,
  type QueueSampler,
  queueSampler,
} from "./queue-metrics.js";

/** The names of the queues shared by every tenant (the timeout planner's and the dispatcher's). */
const SHARED = ["webhooks", "timeouts"] as const;

/** The continuation queues listed one by one, the most waiting jobs first. */
export const BUSIEST = 10;

export const HttpFiguresSchema = z
  .object({
    series: z.array(
      z.object({ at: z.string(), requests: z.number(), clientErrors: z.number(), serverErrors: z.number() }),
    ),
    recent: z.object({
      seconds: z.number(),
      requestsPerSec: z.number(),
      clientErrorsPerSec: z.number(),
      serverErrorsPerSec: z.number(),
      clientErrorShare: z.number().nullable(),
      serverErrorShare: z.number().nullable(),
    }),
    totals: z.object({ requests: z.number(), clientErrors: z.number(), serverErrors: z.number() }),
  })
  .nullable();

const Figures = z.object({
  waiting: z.number(),
  active: z.number(),
  delayed: z.number(),
  failed: z.number(),
  oldestWaitingAgeMs: z.number().nullable(),
});
type Figures = z.infer<typeof Figures>;

export const QueueFiguresSchema = z
  .object({
    continuations: Figures.extend({ queues: z.number() }),
    webhooks: Figures.nullable(),
    timeouts: Figures.nullable(),
    busiest: z.array(Figures.extend({ queue: z.string() })),
  })
  .nullable();
export type QueueFigures = z.infer<typeof QueueFiguresSchema>;

function figuresOf(s: QueueSample | undefined, at: number): Figures {
  return {
    waiting: s?.counts.waiting ?? 0,
    active: s?.counts.active ?? 0,
    delayed: s?.counts.delayed ?? 0,
    failed: s?.counts.failed ?? 0,
    oldestWaitingAgeMs: s?.oldestWaitingAt == null ? null : Math.max(0, at - s.oldestWaitingAt),
  };
}

/** The continuation queues of one tenant: its own and its groups'. */
function queuesOfTenant(res: Resources, tenant: string): string[] {
  const groups = Object.keys(res.config.tenants[tenant]?.continuationGroups ?? {});
  return [continuationQueueName(tenant), ...groups.map((g) => continuationQueueName(tenant, g))];
}

/**
 * The queue figures of `tenants`' continuation queues, and (`shared`) of the queues every tenant
 * shares. Null when the process knows no queues (`queueNames` empty) or the read failed.
 */
export function queueFigures(
  res: Resources,
  queueNames: QueueNames,
): (tenants: readonly string[], shared: boolean) => Promise<QueueFigures> {
  const sample: QueueSampler | null = namesAnyQueue(queueNames) ? queueSampler(res, queueNames) : null;
  return async (tenants, shared) => {
    const read = sample ? await sample() : null;
    if (!read) return null;
    const known = new Set(currentQueueNames(queueNames));
    const mine = tenants.flatMap((t) => queuesOfTenant(res, t)).filter((q) => known.has(q));
    const each = mine.map((queue) => ({ queue, ...figuresOf(read.samples.get(queue), read.at) }));
    const sum = { queues: each.length, ...figuresOf(undefined, read.at) };
    for (const q of each) {
      sum.waiting += q.waiting;
      sum.active += q.active;
      sum.delayed += q.delayed;
      sum.failed += q.failed;
      if (q.oldestWaitingAgeMs !== null)
        sum.oldestWaitingAgeMs = Math.max(sum.oldestWaitingAgeMs ?? 0, q.oldestWaitingAgeMs);
    }
    const sharedOf = (name: (typeof SHARED)[number]) =>
      shared && known.has(name) ? figuresOf(read.samples.get(name), read.at) : null;
    return {
      continuations: sum,
      webhooks: sharedOf("webhooks"),
      timeouts: sharedOf("timeouts"),
      busiest: each
        .filter((q) => q.waiting + q.active + q.delayed + q.failed > 0)
        .sort((a, b) => b.waiting - a.waiting || a.queue.localeCompare(b.queue))
        .slice(0, BUSIEST),
    };
  };
}
