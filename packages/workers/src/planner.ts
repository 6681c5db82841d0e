/**
 * Planning timeouts: makes sure a BullMQ bucket job will fire for each deadline coming
 * up. One job per time bucket (`t.<bucket end>`) serves every partition, so jobs/s is
 * bounded by 1000 / bucketMs whatever the partition count, and a deadline needs no
 * partition to be planned. The register path plans a new wait's deadline right after
 * registering it (the API process, which runs no Scheduler of its own under `api`),
 * the Scheduler's sweeper plans the deadlines it reads, and firing plans the retries.
 */
import type { Resources } from "@rendezvous/engine";
import { Queue } from "bullmq";

/** Queue of timeout bucket jobs. */
export const TIMEOUT_QUEUE = "timeouts";

/** A bucket job's data. */
export interface BucketJob {
  /** bucket end, ms */
  at: number;
}

export interface PlannerOptions {
  /** bucket width: a timeout fires at most this late plus processing @defaultValue 20 */
  bucketMs?: number;
  /** bucket jobs are made for deadlines up to this far ahead @defaultValue 5000 */
  lookaheadMs?: number;
  /** told of every deadline within the lookahead that plan() is given (the Scheduler's wake-up) */
  onPlan?: (deadline: number) => void;
}

/** Most jobs per MULTI when adding bucket jobs: a long MULTI stalls every client. */
const ADD_CHUNK = 50;

/** A bucket job this process added is forgotten once its end is this far past. */
const FORGET_AFTER_MS = 60_000;

export class TimeoutPlanner {
  readonly queue: Queue<BucketJob>;
  readonly #bucketMs: number;
  readonly #lookaheadMs: number;
  readonly #onPlan: ((deadline: number) => void) | undefined;
  /** bucket job ids this process added, by bucket end (forgotten once past) */
  readonly #added = new Map<string, number>();

  constructor(res: Resources, opts: PlannerOptions = {}) {
    this.#bucketMs = opts.bucketMs ?? 20;
    this.#lookaheadMs = opts.lookaheadMs ?? 5000;
    this.#onPlan = opts.onPlan;
    const log = res.logger.child({ system: "scheduler" });
    this.queue = new Queue<BucketJob>(TIMEOUT_QUEUE, {
      connection: res.connect("scheduler-queue", { blocking: true }),
      prefix: res.queuePrefix,
    });
    // connection trouble (Redis restart, cluster failover) is retried by the client; log, don't crash
    this.queue.on("error", (err) => log.warn({ err }, "timeout queue connection error"));
  }

  /**
   * Makes sure a bucket job will fire for each deadline (idempotent); returns how many
   * jobs it added. Deadlines beyond the lookahead are left to the sweeper, so far
   * deadlines cost no job until they come near. Jobs are added in small MULTIs so none
   * holds Redis long.
   */
  async plan(deadlines: ReadonlyArray<{ deadline: number }>): Promise<number> {
    const now = Date.now();
    const jobs = new Map<string, BucketJob>();
    for (const { deadline } of deadlines) {
      if (deadline > now + this.#lookaheadMs) continue;
      this.#onPlan?.(deadline);
      const at = Math.ceil(deadline / this.#bucketMs) * this.#bucketMs;
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

  /** A bucket job started: a later plan() for its bucket adds it again. */
  fired(jobId: string): void {
    this.#added.delete(jobId);
  }

  /** Forgets the bucket jobs whose end is long past (their ids are never planned again). */
  forgetPast(now: number): void {
    for (const [id, at] of this.#added) if (at < now - FORGET_AFTER_MS) this.#added.delete(id);
  }

  close(): Promise<void> {
    return this.queue.close();
  }
}
