/**
 * Scheduler changes prototyped for the benchmark only (the package is unchanged):
 * they let `bench:timeouts --variant shared-bucket --add-chunk 50` measure a proposed
 * change before anyone makes it.
 */
import type { Resources } from "@rendezvous/engine";
import { Scheduler, type SchedulerOptions } from "@rendezvous/workers";

/** Partition number standing for "every partition this scheduler serves" in a bucket job. */
const ALL = -1;

/**
 * One bucket job per time bucket for all the scheduler's partitions, instead of one per
 * (partition, bucket): at most 1000 / bucketMs jobs per second whatever the partition
 * count. Firing it fires every partition (each reads its due waits from its deadline
 * index, as before).
 */
export class SharedBucketScheduler extends Scheduler {
  readonly #partitions: number[];

  constructor(res: Resources, opts: SchedulerOptions = {}) {
    super(res, opts);
    this.#partitions = opts.partitions ?? res.store.keys.allPartitions();
  }

  override schedule(deadlines: Array<{ partition: number; deadline: number }>): Promise<number> {
    return super.schedule(deadlines.map((d) => ({ partition: ALL, deadline: d.deadline })));
  }

  override async firePartition(partition: number, ids?: string[]): Promise<{ timedOut: number; retry: number }> {
    if (partition !== ALL) return super.firePartition(partition, ids);
    const results = await Promise.all(this.#partitions.map((p) => super.firePartition(p)));
    return results.reduce((a, r) => ({ timedOut: a.timedOut + r.timedOut, retry: a.retry + r.retry }), {
      timedOut: 0,
      retry: 0,
    });
  }
}

/** Splits every addBulk of the queue into calls of at most `size` jobs (each one pipelined round trip). */
export function chunkAddBulk(queue: { addBulk: (jobs: never[]) => Promise<unknown[]> }, size: number): void {
  const whole = queue.addBulk.bind(queue) as (jobs: unknown[]) => Promise<unknown[]>;
  Object.defineProperty(queue, "addBulk", {
    configurable: true,
    writable: true,
    value: async (jobs: unknown[]) => {
      const out: unknown[] = [];
      for (let i = 0; i < jobs.length; i += size) out.push(...(await whole(jobs.slice(i, i + size))));
      return out;
    },
  });
}
