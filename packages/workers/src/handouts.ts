/**
 * What a dispatch step hands out, and what it writes for it: the settled waits of a step's
 * outbox entries with their queues and trace contexts (handouts), their continuation jobs,
 * webhook jobs and `continuation_dispatched` entries, and the step in one call on a single
 * Redis (jobs, entries and ack: job-adds.ts, STEP_LUA). The dispatcher decides which way a
 * step goes (dispatcher.ts).
 */
import {
  type BatchAnnotation,
  bullmqTelemetryMetadata,
  type ConsumerLoop,
  type RedisLike,
  type ResolutionEntry,
  type Resources,
  type Store,
  type TraceCarrier,
  type TraceSpan,
} from "@rendezvous/engine";
import { continuationQueueOf, type Wait } from "@rendezvous/protocol";
import type { Queue } from "bullmq";
import { addStepJobsRecorded, JOBS_PER_CALL, type JobToAdd } from "./job-adds.js";

const DAY_S = 86_400;

/** A settled wait to hand out to its queue, with the trace context its continuation carries on. */
export interface Handout {
  wait: Wait;
  /** the id of its outbox entry */
  entryId: string;
  /** the tenant's queue, or the queue of the group that routes the wait's event type */
  queue: string;
  trace: TraceCarrier | undefined;
  span: TraceSpan | undefined;
}

/** The job options' telemetry of a trace context (none without one). */
function telemetryOf(trace: TraceCarrier | undefined): { telemetry?: { metadata: string } } {
  return trace ? { telemetry: { metadata: bullmqTelemetryMetadata(trace) } } : {};
}

/** The name of every continuation job. */
export const CONTINUATION_JOB = "continuation";

/** A continuation job's options (job id = wait id), kept `retentionMs` once completed. */
export function continuationJobOpts(waitId: string, retentionMs: number, trace?: TraceCarrier): JobToAdd["opts"] {
  return {
    jobId: waitId,
    // kept for continuationRetentionMs (a day by default); compacted by the scheduler meanwhile
    removeOnComplete: { age: Math.ceil(retentionMs / 1000) },
    removeOnFail: { age: 7 * DAY_S },
    ...telemetryOf(trace),
  };
}

/** The continuation jobs of handouts (docs/api.md, Continuations), kept `retentionMs` once completed. */
export function continuationJobs(list: readonly Handout[], retentionMs: number): JobToAdd[] {
  return list.map(({ wait, trace }) => ({
    name: CONTINUATION_JOB,
    data: wait,
    opts: continuationJobOpts(wait.id, retentionMs, trace),
  }));
}

/** The webhook deliveries' jobs of handouts (the `webhooks` queue; webhooks.ts). */
export function webhookJobs(list: readonly Handout[], attempts: number, backoffMs: number): JobToAdd[] {
  return list.map(({ wait, trace }) => ({
    name: "webhook",
    data: { tenant: wait.tenant, waitId: wait.id },
    opts: {
      jobId: `wh.${wait.id}`,
      attempts,
      backoff: { type: "exponential", delay: backoffMs },
      removeOnComplete: { age: DAY_S },
      removeOnFail: { age: 7 * DAY_S },
      ...telemetryOf(trace),
    },
  }));
}

/**
 * The handouts' `continuation_dispatched` entries. An outbox entry handled again after a
 * crash (recorded, not yet acknowledged) finds its job already there (same job id) and
 * records nothing new: `once` keeps one continuation_dispatched per job id.
 */
export function dispatchedEntries(list: readonly Handout[]): BatchAnnotation[] {
  return list.map(({ wait, queue }) => ({
    waitId: wait.id,
    what: "continuation_dispatched" as const,
    detail: { queue, jobId: wait.id },
    once: true,
  }));
}

/**
 * The settled waits of a partition's outbox entries (carried by the entries, else read
 * through `store`: entries of before; gone once expired), each with its queue (the
 * tenant's, or the group's routing its event type) and the context its continuation
 * carries: the resolution's, else the wait's registration context; a tracing process's
 * dispatch span's.
 */
export async function handoutsOf(
  res: Resources,
  store: Store,
  partition: number,
  entries: readonly ResolutionEntry[],
): Promise<Handout[]> {
  const missing = entries.flatMap((e) => (e.wait === null && e.waitId ? [e.waitId] : []));
  const read = missing.length > 0 ? await store.getWaits(missing) : [];
  let r = 0;
  const tracing = res.tracing;
  const handouts: Handout[] = [];
  for (const e of entries) {
    const wait = e.wait ?? (e.waitId ? read[r++] : null);
    if (!wait) continue;
    const queue = continuationQueueOf(res.config.tenants, wait.tenant, wait.eventType);
    const received = e.trace ?? e.registration;
    if (!tracing.enabled) {
      handouts.push({ wait, entryId: e.id, queue, trace: received, span: undefined });
      continue;
    }
    const span = tracing.start("rendezvous.dispatch", {
      kind: "producer",
      parent: received,
      // a resolution by an event is in the event's trace: the registration is a link
      links: e.trace ? [e.registration] : undefined,
      attributes: {
        "messaging.system": "bullmq",
        "messaging.operation.type": "send",
        "messaging.operation.name": "dispatch",
        "messaging.destination.name": queue,
        "messaging.message.id": wait.id,
        "rendezvous.partition": partition,
        "rendezvous.tenant": wait.tenant,
        "rendezvous.wait.id": wait.id,
        "rendezvous.resolution.kind": wait.resolution?.kind ?? "",
      },
    });
    handouts.push({ wait, entryId: e.id, queue, trace: span.carrier ?? received, span });
  }
  return handouts;
}

/** What a step in one call writes with: the queue (every handout's), its connection, the Store and the loop that acks. */
export interface OneCallStep {
  queue: Queue;
  connection: RedisLike;
  store: Store;
  loop: ConsumerLoop<ResolutionEntry>;
  retentionMs: number;
  warn: (msg: string) => void;
}

/**
 * A step of one queue's handouts on a single Redis: calls of up to JOBS_PER_CALL jobs, each
 * with its jobs' `continuation_dispatched` entries and the ack of its jobs' outbox entries
 * (the first also acks `ids`' entries that had no wait left), each committed whole or not
 * at all (STEP_LUA). False: not done (bullmq is not as expected, or nothing to annotate);
 * the step goes the usual way, which adds nothing twice (job ids) and records nothing twice.
 */
export async function stepInOneCall(
  s: OneCallStep,
  partition: number,
  handouts: readonly Handout[],
  ids: readonly string[],
): Promise<boolean> {
  const calls: Array<[Handout[], string[]]> = [];
  for (let i = 0; i < handouts.length; i += JOBS_PER_CALL) {
    const list = handouts.slice(i, i + JOBS_PER_CALL);
    calls.push([list, list.map((h) => h.entryId)]);
  }
  const handed = new Set(handouts.map((h) => h.entryId));
  calls[0]?.[1].push(...ids.filter((id) => !handed.has(id)));
  const each = await Promise.all(
    calls.map(([list, acks]) => {
      const [annotate] = s.store.annotateCalls(dispatchedEntries(list));
      if (!annotate) return false;
      const record = { annotate, ack: s.loop.ackOf(partition, acks) };
      return addStepJobsRecorded(s.queue, s.connection, continuationJobs(list, s.retentionMs), record, s.warn);
    }),
  );
  return each.every(Boolean);
}
