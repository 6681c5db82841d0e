/**
 * The dispatcher: moves resolutions from the partition outboxes to the BullMQ queue
 * `continuations.<tenant>` (or `continuations.<tenant>.<group>` where the tenant's
 * continuationGroups route the wait's event type; job name `continuation`, job id = wait id, data = the
 * Wait) and, where the tenant has a webhook, to the internal `webhooks` queue whose
 * worker POSTs a signed request with retries and backoff. An outbox entry is acked
 * only after its jobs are enqueued; a re-dispatch after a crash finds the job by id
 * and adds nothing.
 *
 * A backlog (a burst of timeouts, a flood of events) is handed out in steps of at most
 * `step` entries, each acking its own entries once their jobs exist. Given a `Pacer`
 * (`rendezvous start` shares one with the scheduler, to leave the API room in the same
 * event loop) the steps run one at a time across partitions with a rest after each full
 * one; alone in a process the dispatcher runs partitions in parallel, unpaced.
 *
 * Tracing: a resolution's context (the match's, else the wait's registration context)
 * goes on its continuation job as BullMQ's telemetry carries it
 * (`opts.telemetry.metadata`, bullmq-otel's format) and on its webhook request's
 * headers; a tracing dispatcher hands each one out in a producer span
 * (`rendezvous.dispatch`, child of that context) and carries the span's context instead.
 */
import {
  type AcceptJobs,
  ConsumerLoop,
  DISPATCHER_GROUP,
  failpoint,
  failpointArmed,
  type Handoff,
  isCluster,
  Pacer,
  RESOLUTION_FEED,
  type RedisLike,
  type ResolutionEntry,
  type Resources,
  type Store,
  type StreamEntry,
} from "@rendezvous/engine";
import { continuationQueueName } from "@rendezvous/protocol";
import { Queue } from "bullmq";
import { acceptJobsOf } from "./accept-jobs.js";
import {
  continuationJobs,
  dispatchedEntries,
  type Handout,
  handoutsOf,
  type OneCallStep,
  stepInOneCall,
  webhookJobs,
} from "./handouts.js";
import { addStepJobs, type JobToAdd } from "./job-adds.js";
import { WEBHOOK_QUEUE, WebhookDeliveries } from "./webhooks.js";

/** Queue of a tenant's continuations (docs/api.md, Continuations): defined by @rendezvous/protocol, re-exported here. */
export { continuationQueueName };

/** `dispatcher.after-annotate` armed: each step records its dispatches and acks in two round trips, the point between them */
const AFTER_ANNOTATE_ARMED = failpointArmed("dispatcher.after-annotate");
/** a dispatcher failpoint armed: every step takes its round trips one by one, with the failpoints' points between them */
const ONE_CALL_OFF = AFTER_ANNOTATE_ARMED || failpointArmed("dispatcher.after-enqueue");

export interface DispatcherOptions {
  partitions?: number[];
  consumer?: string;
  blockMs?: number;
  /** webhook worker concurrency @defaultValue 16; 0 = no webhook worker in this process */
  webhookConcurrency?: number;
  /** webhook attempts before giving up @defaultValue 12 */
  webhookAttempts?: number;
  /** first backoff delay @defaultValue 1000 */
  webhookBackoffMs?: number;
  /** request timeout @defaultValue 10000 */
  webhookTimeoutMs?: number;
  /** most outbox entries handed out in one step (jobs added per queue, then `annotateMany` with the `XACK`) @defaultValue 50 */
  step?: number;
  /**
   * rest after a full step, as a multiple of its duration (at most 50 ms), steps one at
   * a time across partitions; 0: no pacing, partitions in parallel @defaultValue 0;
   * ignored with `pacer`
   */
  restRatio?: number;
  /** paces the steps (one at a time, a rest after each full one); `rendezvous start` shares one with the scheduler */
  pacer?: Pacer;
  /** most entries one `XREADGROUP` reads per partition @defaultValue 100 */
  readCount?: number;
}

export class Dispatcher {
  readonly #res: Resources;
  readonly #opts: DispatcherOptions;
  readonly loop: ConsumerLoop<ResolutionEntry>;
  readonly #queueConn: RedisLike;
  /** a step in one call where it can be (a single Redis, no dispatcher failpoint armed) */
  readonly #oneCall: boolean;
  /**
   * the Store on the dispatcher's own connection: its pipelines queue none of the API's
   * commands behind them (public so that a benchmark can time its calls: bench:e2e)
   */
  readonly store: Store;
  readonly #queues = new Map<string, Queue>();
  /** runs a step: in its lane of the pacer (one step at a time across partitions), or at once when unpaced */
  readonly #paced: Pacer["run"];
  readonly #step: number;
  readonly #webhooks: WebhookDeliveries;
  #stopped = false;
  /** partitions' entries being handed out now (read or handed over) */
  #busy = 0;
  /** this dispatcher's consumer, for the matcher of its process (see `handoff`) */
  readonly #handoff: Handoff;
  #unfollow: (() => void) | undefined;
  /** by queue: the accept's AcceptJobs, null while collected or where bullmq is not as expected */
  readonly #acceptJobs = new Map<string, AcceptJobs | null>();

  constructor(res: Resources, opts: DispatcherOptions = {}) {
    this.#res = res;
    this.#opts = opts;
    this.#queueConn = res.connect("dispatcher-queues", { blocking: true });
    this.#oneCall = !ONE_CALL_OFF && !isCluster(this.#queueConn);
    const commands = res.connect("dispatcher-commands");
    this.store = res.store.withConnection(commands);
    const restRatio = opts.restRatio ?? 0;
    // unpaced (a dispatcher alone in its process): partitions in parallel, each in steps
    this.#paced = opts.pacer
      ? opts.pacer.lane()
      : restRatio > 0
        ? new Pacer(restRatio).lane()
        : (_full, work) => work();
    this.#step = Math.max(1, Math.floor(opts.step ?? 50));
    this.loop = new ConsumerLoop({
      name: "dispatcher",
      redis: commands,
      blocking: (purpose) => res.connect(purpose, { blocking: true }),
      keys: res.store.keys,
      feed: RESOLUTION_FEED,
      partitions: opts.partitions ?? res.store.keys.allPartitions(),
      handle: (p, entries) => this.#handle(p, entries),
      count: opts.readCount ?? 100,
      logger: res.logger.child({ system: "dispatcher" }),
      claimIdleMs: res.config.claimIdleMs,
      consumer: opts.consumer,
      blockMs: opts.blockMs,
    });
    this.#handoff = { group: DISPATCHER_GROUP, consumer: this.loop.consumer };
    this.#webhooks = new WebhookDeliveries(res, this.store, {
      concurrency: opts.webhookConcurrency ?? 16,
      timeoutMs: opts.webhookTimeoutMs ?? 10_000,
    });
  }

  /** Adds a step's jobs to the queue `name`, each idempotent by its job id: script calls of up to 16 jobs (job-adds.ts). */
  #addJobs(name: string, jobs: JobToAdd[]): Promise<unknown> {
    return addStepJobs(this.queue(name), this.#queueConn, jobs, (msg) => this.#res.logger.warn({ queue: name }, msg));
  }

  /** The BullMQ queue (cached) of a tenant's continuations, or of webhook deliveries. */
  queue(name: string): Queue {
    let q = this.#queues.get(name);
    if (!q) {
      q = new Queue(name, { connection: this.#queueConn, prefix: this.#res.queuePrefix });
      // connection trouble (Redis restart, cluster failover) is retried by the client; log, don't crash
      q.on("error", (err) => this.#res.logger.warn({ err, queue: name }, "queue connection error"));
      this.#queues.set(name, q);
    }
    return q;
  }

  async start(): Promise<void> {
    this.#webhooks.start();
    // the accept's job arguments of the configured tenants collected now, before their first events
    for (const tenant of Object.keys(this.#res.config.tenants)) this.jobsFor(tenant);
    // a webhook added at run time (the registry) starts the deliveries then
    this.#unfollow = this.#res.directory.onChange(() => this.#webhooks.start());
    await this.loop.start();
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    this.#unfollow?.();
    await this.loop.stop();
    await this.#webhooks.stop();
    await Promise.all([...this.#queues.values()].map((q) => q.close()));
  }

  /**
   * Where the matcher of this process has its matches deliver the outbox's new entries to
   * this dispatcher (`rendezvous start`): its own consumer of group `dispatchers`; none
   * while it hands out a step (or has stopped), so that under load its own read gathers
   * what comes meanwhile into steps as big as without a handoff.
   */
  get handoff(): Handoff | undefined {
    return this.#busy > 0 || this.#stopped ? undefined : this.#handoff;
  }

  /**
   * The queue on which the accept of this process adds the continuation jobs of `tenant`'s
   * waits itself, in the step that resolves them (docs/architecture.md, "Continuations added
   * in the accept"): where a step in one call would be taken (a single Redis, no dispatcher
   * failpoint armed), not tracing, and every continuation of the tenant goes to its own
   * queue (no webhook, no continuation groups: looked up on each call, tenants change at
   * run time). Undefined otherwise, and until the queue's arguments are collected (the
   * first call asks for them).
   */
  jobsFor(tenant: string): AcceptJobs | undefined {
    const t = this.#res.config.tenants[tenant];
    if (!this.#oneCall || this.#res.tracing.enabled || t?.webhook) return undefined;
    if (t?.continuationGroups && Object.keys(t.continuationGroups).length > 0) return undefined;
    const name = continuationQueueName(tenant);
    const known = this.#acceptJobs.get(name);
    if (known !== undefined) return known ?? undefined;
    this.#acceptJobs.set(name, null);
    const warn = (msg: string) => this.#res.logger.warn({ queue: name }, msg);
    acceptJobsOf(this.queue(name), tenant, this.#res.config.continuationRetentionMs, warn).then(
      (jobs) => {
        if (jobs) this.#acceptJobs.set(name, jobs);
      },
      (err: unknown) => this.#res.logger.warn({ err, queue: name }, "continuation jobs added by the dispatcher only"),
    );
    return undefined;
  }

  /**
   * Hands out outbox entries a match delivered to this dispatcher's consumer (see
   * `handoff`), as if its read had: the same steps, acked after their jobs exist, left
   * pending on failure or a crash (claimed after claimIdleMs, as any read entry).
   */
  take(partition: number, entries: StreamEntry[]): Promise<void> {
    this.#res.metrics.outboxHandoffs.inc(entries.length);
    return this.loop.handOver(partition, entries);
  }

  /** A partition's entries in order, in paced steps of at most `step`. */
  async #handle(partition: number, entries: ResolutionEntry[]): Promise<void> {
    const step = this.#step;
    this.#busy++;
    try {
      for (let from = 0; from < entries.length; from += step) {
        const slice = entries.slice(from, from + step);
        await this.#paced(slice.length >= step, () => this.#dispatch(partition, slice));
      }
    } finally {
      this.#busy--;
    }
  }

  /**
   * One step: jobs for the entries' waits, then their continuation_dispatched entries and
   * the entries' ack in one pipeline (one partition: one slot); on a single Redis, a step
   * of one queue's jobs (no webhook) all three in one call per JOBS_PER_CALL jobs. The waits come with their
   * outbox entries; an entry written before they did is answered by a read of its wait.
   */
  async #dispatch(partition: number, entries: ResolutionEntry[]): Promise<void> {
    const handouts = await handoutsOf(this.#res, this.store, partition, entries);
    const byQueue = new Map<string, Handout[]>();
    const hooks: Handout[] = [];
    for (const h of handouts) {
      const list = byQueue.get(h.queue);
      if (list) list.push(h);
      else byQueue.set(h.queue, [h]);
      if (this.#res.config.tenants[h.wait.tenant]?.webhook) hooks.push(h);
    }
    const retentionMs = this.#res.config.continuationRetentionMs;
    const ids = entries.map((e) => e.id);
    const [only] = byQueue;
    if (only && byQueue.size === 1 && hooks.length === 0 && this.#oneCall) {
      let done = false;
      try {
        done = await stepInOneCall(this.#oneCallStep(only[0]), partition, handouts, ids);
      } catch (err) {
        for (const h of handouts) h.span?.fail(err);
        for (const h of handouts) h.span?.end();
        throw err;
      }
      if (done) {
        for (const h of handouts) h.span?.end();
        this.#res.metrics.continuationsDispatched.inc({ channel: "queue" }, handouts.length);
        return;
      }
    }
    // the continuation jobs of every queue and the webhook deliveries in one round trip
    const adds = [...byQueue].map(([name, list]) => this.#addJobs(name, continuationJobs(list, retentionMs)));
    if (hooks.length > 0) {
      const o = this.#opts;
      adds.push(this.#addJobs(WEBHOOK_QUEUE, webhookJobs(hooks, o.webhookAttempts ?? 12, o.webhookBackoffMs ?? 1000)));
    }
    try {
      await Promise.all(adds);
    } catch (err) {
      for (const h of handouts) h.span?.fail(err);
      throw err;
    } finally {
      for (const h of handouts) h.span?.end();
    }
    failpoint("dispatcher.after-enqueue");
    const annotations = dispatchedEntries(handouts);
    if (AFTER_ANNOTATE_ARMED) {
      // the failpoint's point exists only between the two: record, (crash,) then ack
      await this.store.annotateMany(annotations);
      failpoint("dispatcher.after-annotate");
      await this.loop.ack(partition, ids);
    } else {
      await this.store.annotateMany(annotations, [this.loop.ackCommand(partition, ids)]);
    }
    this.#res.metrics.continuationsDispatched.inc({ channel: "queue" }, handouts.length);
  }

  /** What a step of the queue `name` in one call writes with (handouts.ts). */
  #oneCallStep(name: string): OneCallStep {
    return {
      queue: this.queue(name),
      connection: this.#queueConn,
      store: this.store,
      loop: this.loop,
      retentionMs: this.#res.config.continuationRetentionMs,
      warn: (msg) => this.#res.logger.warn({ queue: name }, msg),
    };
  }
}
