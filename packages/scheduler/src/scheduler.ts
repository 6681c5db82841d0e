/**
 * Timeouts: BullMQ delayed jobs race deadlines against completions, one job per
 * time bucket (20 ms) for all partitions rather than one per wait, so a pending
 * wait costs no job of its own. A bucket job fires at the end of its bucket and
 * times out every due wait of every partition (`timeoutWait`, the event-time rule). The partition's
 * deadline index is the source of truth: the sweeper re-creates bucket jobs for
 * deadlines coming up and fires overdue waits whose job went missing, so a crash
 * between registering a wait and scheduling its job loses nothing.
 */
import { execBatch, failpoint, type Resources } from "@rendezvous/core";
import { type Job, Queue, Worker } from "bullmq";

/** Queue of timeout bucket jobs. */
export const TIMEOUT_QUEUE = "timeouts";

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
  /** bucket worker concurrency @defaultValue 4 */
  concurrency?: number;
  /** partitions this process sweeps @defaultValue all */
  partitions?: number[];
}

interface BucketJob {
  /** bucket end, ms */
  at: number;
}

/** Records removed per partition per expiry call, and calls per sweep. */
const EXPIRE_BATCH = 500;
const EXPIRE_ROUNDS = 4;

/** Most jobs per MULTI when adding bucket jobs: a long MULTI stalls every client. */
const ADD_CHUNK = 50;

export class Scheduler {
  readonly #res: Resources;
  readonly #o: Required<SchedulerOptions>;
  readonly queue: Queue<BucketJob>;
  #worker: Worker<BucketJob> | undefined;
  #sweepTimer: NodeJS.Timeout | undefined;
  #sweeping: Promise<unknown> | undefined;
  /** bucket job ids this process added, by bucket end (forgotten once past) */
  readonly #added = new Map<string, number>();
  readonly #log;

  constructor(res: Resources, opts: SchedulerOptions = {}) {
    this.#res = res;
    this.#o = {
      bucketMs: opts.bucketMs ?? 20,
      retryMs: opts.retryMs ?? 100,
      sweepIntervalMs: opts.sweepIntervalMs ?? 1000,
      lookaheadMs: opts.lookaheadMs ?? 5000,
      graceMs: opts.graceMs ?? 2000,
      batch: opts.batch ?? 1000,
      concurrency: opts.concurrency ?? 4,
      partitions: opts.partitions ?? res.store.keys.allPartitions(),
    };
    this.#log = res.logger.child({ system: "scheduler" });
    this.queue = new Queue<BucketJob>(TIMEOUT_QUEUE, {
      connection: res.connect("scheduler-queue", { blocking: true }),
      prefix: res.queuePrefix,
    });
    // connection trouble (Redis restart, cluster failover) is retried by the client; log, don't crash
    this.queue.on("error", (err) => this.#log.warn({ err }, "timeout queue connection error"));
  }

  /**
   * Makes sure a bucket job will fire for each deadline (idempotent; the register
   * path calls it right after registering). One job per time bucket serves every
   * partition, so jobs/s is bounded by 1000 / bucketMs whatever the partition count.
   * Deadlines beyond the lookahead are left to the sweeper, so far deadlines cost no
   * job until they come near. Jobs are added in small MULTIs so none holds Redis long.
   */
  async schedule(deadlines: Array<{ partition?: number; deadline: number }>): Promise<number> {
    const now = Date.now();
    const jobs = new Map<string, BucketJob>();
    for (const { deadline } of deadlines) {
      if (deadline > now + this.#o.lookaheadMs) continue;
      const at = Math.ceil(deadline / this.#o.bucketMs) * this.#o.bucketMs;
      const id = `t.${at}`;
      if (!this.#added.has(id)) jobs.set(id, { at });
    }
    if (jobs.size === 0) return 0;
    const list = [...jobs];
    for (let i = 0; i < list.length; i += ADD_CHUNK) {
      await this.queue.addBulk(
        list.slice(i, i + ADD_CHUNK).map(([id, data]) => ({
          name: "bucket",
          data,
          opts: { jobId: id, delay: Math.max(0, data.at - now), removeOnComplete: true, removeOnFail: 1000 },
        })),
      );
    }
    for (const [id, data] of jobs) this.#added.set(id, data.at);
    return jobs.size;
  }

  async start(): Promise<void> {
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
    if (this.#sweepTimer) clearInterval(this.#sweepTimer);
    this.#sweepTimer = undefined;
    await this.#sweeping;
    await this.#worker?.close();
    await this.queue.close();
  }

  async #fire(job: Job<BucketJob>): Promise<void> {
    this.#added.delete(job.id ?? "");
    await this.fireDue();
  }

  /**
   * Times out every due wait of every partition (a bucket job serves them all, so
   * schedulers configured with different partitions still share bucket jobs): one
   * pipelined read of the deadline indexes, one pipelined round of `timeoutWait`.
   */
  async fireDue(): Promise<{ timedOut: number; retry: number }> {
    const all = this.#res.store.keys.allPartitions();
    const total = { timedOut: 0, retry: 0 };
    for (;;) {
      const now = Date.now();
      const results = await execBatch(
        this.#res.redis,
        all.map((p) => {
          const key = this.#res.store.keys.partition(p).deadlines;
          return { key, add: (pl) => pl.zrangebyscore(key, "-inf", now, "LIMIT", 0, this.#o.batch) };
        }),
      );
      const due: string[] = [];
      let full = false;
      for (const [err, ids] of results) {
        if (err) throw err;
        due.push(...(ids as string[]));
        if ((ids as string[]).length === this.#o.batch) full = true;
      }
      if (due.length === 0) break;
      const r = await this.#timeOut(due);
      total.timedOut += r.timedOut;
      total.retry += r.retry;
      // a full batch that timed out may have more behind it
      if (!full || r.timedOut === 0) break;
    }
    return total;
  }

  /** Times out the given waits of a partition (the sweeper's overdue ones), or its due waits. */
  async firePartition(partition: number, ids?: string[]): Promise<{ timedOut: number; retry: number }> {
    const keys = this.#res.store.keys.partition(partition);
    const due =
      ids ?? (await this.#res.redis.zrangebyscore(keys.deadlines, "-inf", Date.now(), "LIMIT", 0, this.#o.batch));
    return due.length === 0 ? { timedOut: 0, retry: 0 } : this.#timeOut(due);
  }

  /** One pipelined round of `timeoutWait`; a retry job for those an on-time event still holds back. */
  async #timeOut(ids: string[]): Promise<{ timedOut: number; retry: number }> {
    const results = await this.#res.store.timeoutMany(ids);
    failpoint("scheduler.after-timeout");
    const firedAt = Date.now();
    let timedOut = 0;
    const later: Array<{ deadline: number }> = [];
    for (const r of results) {
      if (r.outcome === "timed_out") {
        timedOut++;
        this.#res.metrics.resolutions.inc({ kind: "timeout", tenant: r.wait.tenant });
        const deadline = Date.parse(r.wait.deadline ?? "");
        if (Number.isFinite(deadline))
          this.#res.metrics.timeoutLateness.observe({ tenant: r.wait.tenant }, Math.max(0, firedAt - deadline) / 1000);
      } else if (r.outcome === "backlog" || (r.outcome === "not_due" && r.deadline !== null)) {
        later.push({ deadline: Math.max(firedAt + this.#o.retryMs, r.deadline ?? 0) });
      }
    }
    if (later.length > 0) await this.schedule(later);
    return { timedOut, retry: later.length };
  }

  /**
   * One sweep over this process's partitions: bucket jobs for deadlines within the
   * lookahead; waits overdue beyond the grace period (their job went missing) are
   * marked `sweeper_rescheduled` and fired here; then retention (`expire`).
   */
  async sweep(): Promise<{ scheduled: number; fired: number; expired: number }> {
    const now = Date.now();
    for (const [id, at] of this.#added) if (at < now - 60_000) this.#added.delete(id);
    const results = await execBatch(
      this.#res.redis,
      this.#o.partitions.map((p) => {
        const key = this.#res.store.keys.partition(p).deadlines;
        return {
          key,
          add: (pl) =>
            pl.zrangebyscore(key, "-inf", now + this.#o.lookaheadMs, "WITHSCORES", "LIMIT", 0, this.#o.batch * 5),
        };
      }),
    );
    const upcoming: Array<{ partition: number; deadline: number }> = [];
    let fired = 0;
    for (const [i, [err, flat]] of results.entries()) {
      if (err) throw err;
      const partition = this.#o.partitions[i] as number;
      const overdue: string[] = [];
      const list = flat as string[];
      for (let j = 0; j + 1 < list.length; j += 2) {
        const id = list[j] as string;
        const deadline = Number(list[j + 1]);
        if (deadline < now - this.#o.graceMs) overdue.push(id);
        else upcoming.push({ partition, deadline });
      }
      if (overdue.length > 0) {
        this.#log.warn({ partition, count: overdue.length }, "overdue waits without a timeout job: firing them");
        await Promise.all(
          overdue.map((id) =>
            this.#res.store.annotate(null, id, "sweeper_rescheduled", {}, { once: true }).catch(() => undefined),
          ),
        );
        fired += (await this.firePartition(partition, overdue)).timedOut;
      }
    }
    const scheduled = await this.schedule(upcoming);
    const expired = await this.expire();
    return { scheduled, fired, expired };
  }

  /**
   * Retention: removes what has outlived its time (settled waits, buffered events,
   * event and dedup records, refusals) in this process's partitions, in bounded
   * steps: at most `expireRounds` pipelined rounds of 500 records per partition.
   */
  async expire(): Promise<number> {
    let partitions = this.#o.partitions;
    let expired = 0;
    for (let round = 0; round < EXPIRE_ROUNDS && partitions.length > 0; round++) {
      const results = await this.#res.store.expireMany(partitions, EXPIRE_BATCH);
      expired += results.reduce((n, r) => n + r.handled, 0);
      partitions = partitions.filter((_, i) => results[i]?.more);
    }
    return expired;
  }
}
