/**
 * Timeouts: BullMQ delayed jobs race deadlines against completions, one job per
 * time bucket (20 ms) for all partitions rather than one per wait, so a pending
 * wait costs no job of its own. A bucket job fires at the end of its bucket and
 * times out every due wait of every partition (`timeoutWait`, the event-time rule). The partition's
 * deadline index, with its parked slots (far deadlines, which each sweep promotes into the
 * index before they come near), is the source of truth: the sweeper re-creates bucket jobs for
 * deadlines coming up and fires overdue waits whose job went missing, so a crash
 * between registering a wait and scheduling its job loses nothing.
 *
 * Many waits may share one deadline (one bucket): they are fired in bounded steps
 * (`firing.ts`) on a connection of the scheduler's own, one run at a time per
 * process, so a burst of timeouts does not starve the API or other clients.
 * Bucket jobs are added by a `TimeoutPlanner` (planner.ts); retention runs at the end
 * of each sweep (retention.ts).
 *
 * The wake-up. A bucket job reaches its worker through BullMQ's promotion of delayed
 * jobs, which happens only when the worker fetches a job: while a long firing run holds
 * the worker's slots (its jobs wait for the run they joined), nothing is promoted, and
 * every wait due meanwhile waits for that run to end, a job to complete and the next to
 * be fetched (seconds under load). So the scheduler also wakes itself: each pass reads,
 * with the due waits, the earliest deadline still ahead (same round trip), and a local
 * timer starts the next pass at that deadline (at the soonest `wakeGapMs` after the last
 * pass began, so a steady stream of deadlines costs at most 1000 / wakeGapMs passes a
 * second); deadlines this process plans (its sweeper, retries, the API under `start`)
 * arm it too. The bucket jobs stay: they wake a scheduler for deadlines it has not seen
 * (a wait registered by another process, due within the sweep period) and after a
 * crash, and the deadline index stays the source of truth.
 */
import { Pacer, PartitionReader, type Resources, type Store } from "@rendezvous/engine";
import { continuationQueues } from "@rendezvous/protocol";
import { type Job, type Queue, Worker } from "bullmq";
import { addFiring, type FireResult, fireInSteps, noFiring } from "./firing.js";
import { type BucketJob, TIMEOUT_QUEUE, TimeoutPlanner } from "./planner.js";
import { Compaction, QuotaRecount, Retention, UPKEEP_BUDGET_MS } from "./retention.js";

export interface SchedulerOptions {
  /** bucket width: a timeout fires at most this late plus processing @defaultValue 20 */
  bucketMs?: number;
  /**
   * retry delay when an on-time event of the wait's match key is still unprocessed, or
   * more than 100 on-time events or stream entries of its partition are (backlog)
   * @defaultValue 100
   */
  retryMs?: number;
  /** sweeper period @defaultValue 1000 */
  sweepIntervalMs?: number;
  /** bucket jobs are made for deadlines up to this far ahead @defaultValue 5000 */
  lookaheadMs?: number;
  /** a wait overdue by more than this is fired by the sweeper itself @defaultValue 2000 */
  graceMs?: number;
  /** most waits one pass reads per partition @defaultValue 1000 */
  batch?: number;
  /** most waits one timeout step sends to Redis (one pipelined `timeoutWait` per partition among them) @defaultValue 50 */
  step?: number;
  /**
   * rest between two timeout steps, as a multiple of the last step's duration (at most
   * 50 ms; 0 = one turn of the event loop): a burst then takes at most about half of the
   * process's time, leaving the rest to the API and to the dispatcher, which hands out the
   * burst's continuations @defaultValue 1; ignored with `pacer`
   */
  restRatio?: number;
  /** paces the timeout steps; `rendezvous start` shares one with the dispatcher @defaultValue a pacer of its own */
  pacer?: Pacer;
  /**
   * the local wake-up (above) starts a pass at most this soon after the last one began;
   * a timeout fires at most this late plus processing when this process knows its
   * deadline @defaultValue 10
   */
  wakeGapMs?: number;
  /** bucket worker concurrency @defaultValue 4 */
  concurrency?: number;
  /** partitions this process sweeps @defaultValue all */
  partitions?: number[];
}

/**
 * Parked deadlines (the engine's lua/includes/parked-deadlines.lua: waits registered 5
 * minutes to 24 hours before their deadline) enter the deadline index this long before
 * their slot starts, at each sweep.
 */
const PROMOTE_REACH_MS = 60_000;

/** Deadline entries per partition per read of the sweeper's upcoming scan (the engine's reads/deadlines.ts). */
const SCAN_LIMIT = 200;

export class Scheduler {
  readonly #res: Resources;
  readonly #o: Required<Omit<SchedulerOptions, "restRatio">>;
  /** adds the bucket jobs; the API process of `start` plans new waits' deadlines with it too */
  readonly planner: TimeoutPlanner;
  readonly queue: Queue<BucketJob>;
  #worker: Worker<BucketJob> | undefined;
  #sweepTimer: NodeJS.Timeout | undefined;
  #sweeping: Promise<unknown> | undefined;
  readonly #log;
  /** the Store on the scheduler's own connection, opened when first needed */
  #timeoutStore: Store | undefined;
  /** the fireDue run in progress, and whether a caller asked for another pass meanwhile */
  #firing: Promise<FireResult> | undefined;
  #again = false;
  /** the local wake-up: its timer, when it fires (Infinity: not armed), when the last pass began */
  #wakeTimer: NodeJS.Timeout | undefined;
  #wakeAt = Number.POSITIVE_INFINITY;
  #lastPassAt = 0;
  /** the earliest deadline ahead that the last pass read (null: none) */
  #next: number | null = null;
  #running = false;

  constructor(res: Resources, opts: SchedulerOptions = {}) {
    this.#res = res;
    this.#o = {
      bucketMs: opts.bucketMs ?? 20,
      retryMs: opts.retryMs ?? 100,
      sweepIntervalMs: opts.sweepIntervalMs ?? 1000,
      lookaheadMs: opts.lookaheadMs ?? 5000,
      graceMs: opts.graceMs ?? 2000,
      batch: opts.batch ?? 1000,
      step: Math.max(1, opts.step ?? 50),
      pacer: opts.pacer ?? new Pacer(Math.max(0, opts.restRatio ?? 1)),
      wakeGapMs: Math.max(1, opts.wakeGapMs ?? 10),
      concurrency: opts.concurrency ?? 4,
      partitions: opts.partitions ?? res.store.keys.allPartitions(),
    };
    this.#log = res.logger.child({ system: "scheduler" });
    this.planner = new TimeoutPlanner(res, {
      bucketMs: this.#o.bucketMs,
      lookaheadMs: this.#o.lookaheadMs,
      onPlan: (deadline) => this.#wake(deadline),
    });
    this.queue = this.planner.queue;
  }

  /** Makes sure a bucket job will fire for each deadline (`TimeoutPlanner.plan`); how many jobs it added. */
  schedule(deadlines: ReadonlyArray<{ deadline: number }>): Promise<number> {
    return this.planner.plan(deadlines);
  }

  async start(): Promise<void> {
    this.#running = true;
    this.#worker = new Worker<BucketJob>(TIMEOUT_QUEUE, (job) => this.#fire(job), {
      connection: this.#res.connect("scheduler-worker", { blocking: true }),
      prefix: this.#res.queuePrefix,
      concurrency: this.#o.concurrency,
    });
    this.#worker.on("error", (err) => this.#log.warn({ err }, "timeout worker error"));
    this.#worker.on("failed", (job, err) => this.#log.error({ err, job: job?.id }, "timeout bucket failed"));
    await this.#worker.waitUntilReady();
    const tick = () => {
      if (!this.#sweeping) {
        this.#sweeping = this.sweep()
          .catch((err) => this.#log.error({ err }, "sweep failed"))
          .finally(() => {
            this.#sweeping = undefined;
          });
      }
    };
    tick();
    this.#sweepTimer = setInterval(tick, this.#o.sweepIntervalMs);
    this.#sweepTimer.unref();
  }

  async stop(): Promise<void> {
    this.#running = false;
    clearTimeout(this.#wakeTimer);
    this.#wakeTimer = undefined;
    this.#wakeAt = Number.POSITIVE_INFINITY;
    if (this.#sweepTimer) clearInterval(this.#sweepTimer);
    this.#sweepTimer = undefined;
    await this.#sweeping;
    await this.#worker?.close();
    await this.planner.close();
  }

  async #fire(job: Job<BucketJob>): Promise<void> {
    this.planner.fired(job.id ?? "");
    await this.fireDue();
  }

  /** Timeouts and their reads go through a connection of their own (see Store.withConnection). */
  get #store(): Store {
    this.#timeoutStore ??= this.#res.store.withConnection(this.#res.connect("scheduler-timeouts"));
    return this.#timeoutStore;
  }

  /** A fireDue run is in progress in this process. */
  get firing(): boolean {
    return this.#firing !== undefined;
  }

  /**
   * Times out every due wait of every partition (a bucket job serves them all, so
   * schedulers configured with different partitions still share bucket jobs), in
   * bounded steps. One run at a time per process: a bucket job that comes while a
   * run is going joins it, and the run takes one more pass for what became due since
   * its last read, so concurrent bucket jobs do not fire the same waits twice over.
   */
  fireDue(): Promise<FireResult> {
    if (this.#firing) {
      this.#again = true;
      return this.#firing;
    }
    const run = async () => {
      const total = noFiring();
      do {
        this.#again = false;
        addFiring(total, await this.#fireDuePass());
      } while (this.#again);
      return total;
    };
    this.#firing = run().finally(() => {
      this.#firing = undefined;
      if (this.#next !== null) this.#wake(this.#next);
    });
    return this.#firing;
  }

  /**
   * Arms the local wake-up for a deadline within the lookahead (a later one is the
   * sweeper's), unless it is armed for sooner: a pass then, or `wakeGapMs` after the last
   * pass began if that is later. Only while started.
   */
  #wake(deadline: number): void {
    if (!this.#running) return;
    const now = Date.now();
    if (deadline > now + this.#o.lookaheadMs) return;
    const at = Math.max(deadline, this.#lastPassAt + this.#o.wakeGapMs);
    if (at >= this.#wakeAt) return;
    clearTimeout(this.#wakeTimer);
    this.#wakeAt = at;
    this.#wakeTimer = setTimeout(
      () => {
        this.#wakeTimer = undefined;
        this.#wakeAt = Number.POSITIVE_INFINITY;
        this.fireDue().catch((err) => this.#log.error({ err }, "timeout pass failed"));
      },
      Math.max(0, at - now),
    );
  }

  /** Reads due waits (at most `batch` per partition, one pipelined read) and fires them in steps, until none is due. */
  async #fireDuePass(): Promise<FireResult> {
    const store = this.#store;
    const all = store.keys.allPartitions();
    const total = noFiring();
    for (;;) {
      const now = Date.now();
      this.#lastPassAt = now;
      const { due: results, next } = await new PartitionReader(store).dueAndNext(all, now, this.#o.batch);
      this.#next = next;
      const due: string[] = [];
      let full = false;
      for (const ids of results) {
        due.push(...ids);
        if (ids.length === this.#o.batch) full = true;
      }
      if (due.length === 0) break;
      const r = await this.#timeOut(due);
      addFiring(total, r);
      // a full batch that timed out may have more behind it (one that timed out none: retry jobs)
      if (!full || r.timedOut === 0) break;
    }
    return total;
  }

  /** Times out the given waits of a partition (the sweeper's overdue ones), or its due waits. */
  async firePartition(partition: number, ids?: string[]): Promise<{ timedOut: number; retry: number }> {
    const store = this.#store;
    const due = ids ?? (await new PartitionReader(store).dueWaits(partition, Date.now(), this.#o.batch));
    return due.length === 0 ? noFiring() : this.#timeOut(due);
  }

  /** `timeoutWait` for each wait, in steps of at most `step`; retry jobs for those the rule holds back. */
  #timeOut(ids: string[]): Promise<FireResult> {
    return fireInSteps(ids, {
      store: this.#store,
      metrics: this.#res.metrics,
      step: this.#o.step,
      pacer: this.#o.pacer,
      retryMs: this.#o.retryMs,
      retryAt: (later) => this.schedule(later),
      tracing: this.#res.tracing,
    });
  }

  /**
   * One sweep over this process's partitions: parked deadlines coming near promoted into
   * the deadline index, bucket jobs for deadlines within the
   * lookahead (one read per bucket, however many waits share it: the engine's reads/deadlines.ts);
   * waits overdue beyond the grace period (their job went missing) are marked
   * `sweeper_rescheduled` and fired here, unless a bucket job is running (here or in
   * another process): that job fires every due wait before it ends, so a long burst of
   * timeouts is neither fired twice nor marked as missing its job; then retention.
   */
  async sweep(): Promise<{ scheduled: number; fired: number; expired: number }> {
    const now = Date.now();
    this.planner.forgetPast(now);
    const store = this.#store;
    await this.#promote(store);
    // a bucket job running (here or in another process) fires every due wait before it ends
    const jobRunning = this.firing || (await this.queue.getActiveCount()) > 0;
    const { overdue, upcoming } = await new PartitionReader(store).upcoming(this.#o.partitions, {
      now,
      graceMs: this.#o.graceMs,
      lookaheadMs: this.#o.lookaheadMs,
      bucketMs: this.#o.bucketMs,
      overdueLimit: jobRunning ? 0 : this.#o.batch,
      scanLimit: SCAN_LIMIT,
      maxEntries: this.#o.batch * 5,
    });
    let fired = 0;
    for (const [partition, ids] of overdue) {
      this.#log.warn({ partition, count: ids.length }, "overdue waits without a timeout job: firing them");
      await store.annotateMany(ids.map((waitId) => ({ waitId, what: "sweeper_rescheduled", detail: {}, once: true })));
      fired += (await this.firePartition(partition, ids)).timedOut;
    }
    const scheduled = await this.schedule(upcoming);
    const expired = await this.expire();
    return { scheduled, fired, expired };
  }

  /**
   * Far deadlines parked at registration enter the deadline index before the sweep reads
   * it. A failure is logged and the sweep goes on (the slots stay parked for the next one):
   * the overdue fire, the bucket jobs and retention do not wait on it.
   */
  async #promote(store: Store): Promise<void> {
    try {
      const r = await store.promoteMany(this.#o.partitions, this.#promoteReachMs);
      if (r.more) this.#log.warn({ promoted: r.promoted }, "parked deadlines left for the next sweep");
    } catch (err) {
      this.#log.error({ err }, "promoting parked deadlines failed");
    }
  }

  /**
   * How far ahead the sweep promotes parked deadlines: PROMOTE_REACH_MS, or more when the
   * lookahead and a missed sweep or two would reach further, so the upcoming scan only
   * ever needs the deadline index.
   */
  get #promoteReachMs(): number {
    return Math.max(PROMOTE_REACH_MS, this.#o.lookaheadMs + 2 * this.#o.sweepIntervalMs + this.#o.graceMs);
  }

  readonly #recount = new QuotaRecount();
  readonly #compaction = new Compaction();
  readonly #retention = new Retention();

  /**
   * Retention over this process's partitions (retention.ts), then a step of the quota
   * recount and the compaction of completed continuation jobs; how many records it removed.
   */
  async expire(): Promise<number> {
    const until = performance.now() + UPKEEP_BUDGET_MS;
    const expired = await this.#retention.run(this.#res.store, this.#o.partitions, until);
    const { tenants, quotaRecountMs } = this.#res.config;
    await this.#recount.step(this.#res.store, Object.keys(tenants), quotaRecountMs);
    await this.compact();
    return expired;
  }

  /**
   * Compacts the completed continuation jobs of every queue of the registry's tenants and
   * groups finished `continuationCompactAfterMs` ago or earlier (retention.ts); how many.
   */
  compact(now = Date.now(), until = performance.now() + UPKEEP_BUDGET_MS): Promise<number> {
    const { tenants, continuationCompactAfterMs, continuationRetentionMs } = this.#res.config;
    // jobs removed before they are due: nothing to compact
    if (continuationCompactAfterMs >= continuationRetentionMs) return Promise.resolve(0);
    const queues = continuationQueues(tenants);
    // background work: on the shared connection (as the retention), not the timeouts' own
    return this.#compaction.run(
      this.#res.store.redis,
      this.#res.queuePrefix,
      queues,
      continuationCompactAfterMs,
      now,
      until,
    );
  }
}
