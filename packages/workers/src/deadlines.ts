/**
 * The sweeper's read of the deadline indexes, bounded however many waits share a
 * deadline: the overdue waits of each partition (ids, at most `overdueLimit`; 0 = not
 * read), and the
 * distinct time buckets of the deadlines coming up. A bucket needs one job whatever
 * the number of its waits, so the upcoming read skips the rest of a bucket once it
 * has seen one of its deadlines: a read of `scanLimit` entries per round, the next
 * round starting after the bucket of the last entry read, at most `maxEntries` entries
 * per partition in all.
 */
import { type BatchCommand, execBatch, type Store } from "@rendezvous/engine";

export interface ScanOptions {
  now: number;
  /** a wait overdue by more than this counts as overdue */
  graceMs: number;
  lookaheadMs: number;
  bucketMs: number;
  overdueLimit: number;
  scanLimit: number;
  maxEntries: number;
}

export interface DeadlineScan {
  /** overdue wait ids by partition (partitions with none left out) */
  overdue: Map<number, string[]>;
  /** one deadline per bucket seen, per partition */
  upcoming: Array<{ partition: number; deadline: number }>;
}

export async function scanDeadlines(store: Store, partitions: number[], o: ScanOptions): Promise<DeadlineScan> {
  const overdueBefore = o.now - o.graceMs;
  const until = o.now + o.lookaheadMs;
  const key = (p: number) => store.keys.partition(p).deadlines;
  const overdue = new Map<number, string[]>();
  const upcoming: Array<{ partition: number; deadline: number }> = [];
  // per partition: where the next upcoming read starts, and how many entries were read
  let open = partitions.map((partition) => ({ partition, from: String(overdueBefore), read: 0 }));
  for (let round = 0; open.length > 0; round++) {
    const first = round === 0;
    const commands: BatchCommand[] = [];
    for (const { partition, from } of open) {
      const k = key(partition);
      if (first && o.overdueLimit > 0)
        commands.push({
          key: k,
          add: (pl) => pl.zrangebyscore(k, "-inf", `(${overdueBefore}`, "LIMIT", 0, o.overdueLimit),
        });
      commands.push({
        key: k,
        add: (pl) => pl.zrangebyscore(k, from, until, "WITHSCORES", "LIMIT", 0, o.scanLimit),
      });
    }
    const replies = await execBatch(store.redis, commands);
    const next: typeof open = [];
    const per = first && o.overdueLimit > 0 ? 2 : 1;
    for (const [i, cursor] of open.entries()) {
      if (per === 2) {
        const [err, ids] = replies[i * per] ?? [new Error("no reply"), null];
        if (err) throw err;
        if ((ids as string[]).length > 0) overdue.set(cursor.partition, ids as string[]);
      }
      const [err, flat] = replies[i * per + per - 1] ?? [new Error("no reply"), null];
      if (err) throw err;
      const list = flat as string[];
      let lastBucket = Number.NaN;
      for (let j = 1; j < list.length; j += 2) {
        const deadline = Number(list[j]);
        const bucket = Math.ceil(deadline / o.bucketMs) * o.bucketMs;
        if (bucket !== lastBucket) upcoming.push({ partition: cursor.partition, deadline });
        lastBucket = bucket;
      }
      const read = cursor.read + list.length / 2;
      if (list.length / 2 === o.scanLimit && read < o.maxEntries) {
        next.push({ partition: cursor.partition, from: `(${lastBucket}`, read });
      }
    }
    open = next;
  }
  return { overdue, upcoming };
}
