/**
 * Reads of the deadline indexes (zsets of wait ids scored by deadline).
 *
 * The due waits of a partition or of several (the bucket jobs' and a partition's
 * firing), at most `limit` per partition.
 *
 * The sweeper's read, bounded however many waits share a deadline: the overdue waits
 * of each partition (ids, at most `overdueLimit`; 0 = not read), and the distinct
 * time buckets of the deadlines coming up. A bucket needs one job whatever
 * the number of its waits, so the upcoming read skips the rest of a bucket once it
 * has seen one of its deadlines: a read of `scanLimit` entries per round, the next
 * round starting after the bucket of the last entry read, at most `maxEntries` entries
 * per partition in all.
 */
import { type BatchCommand, execBatch } from "../batch.js";
import { WAIT_BODY_LENGTH } from "../formats/index-members.js";
import { parkedSlotKey } from "../keys.js";
import type { ReaderSource } from "./source.js";

/** Ids of the waits of a partition whose deadline is at or before `now`, at most `limit`. */
export function dueWaits(src: ReaderSource, partition: number, now: number, limit: number): Promise<string[]> {
  return src.redis.zrangebyscore(src.keys.partition(partition).deadlines, "-inf", now, "LIMIT", 0, limit);
}

/** {@link dueWaits} of each partition, in one pipelined round trip (per slot on a cluster). */
export async function dueByPartition(
  src: ReaderSource,
  partitions: number[],
  now: number,
  limit: number,
): Promise<string[][]> {
  const results = await execBatch(
    src.redis,
    partitions.map((p) => {
      const key = src.keys.partition(p).deadlines;
      return { key, add: (pl) => pl.zrangebyscore(key, "-inf", now, "LIMIT", 0, limit) };
    }),
  );
  return results.map(([err, ids]) => {
    if (err) throw err;
    return ids as string[];
  });
}

/**
 * {@link dueByPartition}, and in the same round trip the earliest deadline after `now`
 * over those partitions (null: none): when the scheduler has to look next.
 */
export async function dueAndNext(
  src: ReaderSource,
  partitions: number[],
  now: number,
  limit: number,
): Promise<{ due: string[][]; next: number | null }> {
  const results = await execBatch(
    src.redis,
    partitions.flatMap((p) => {
      const key = src.keys.partition(p).deadlines;
      return [
        { key, add: (pl) => pl.zrangebyscore(key, "-inf", now, "LIMIT", 0, limit) },
        { key, add: (pl) => pl.zrangebyscore(key, `(${now}`, "+inf", "WITHSCORES", "LIMIT", 0, 1) },
      ] satisfies BatchCommand[];
    }),
  );
  const due: string[][] = [];
  let next: number | null = null;
  for (let i = 0; i < results.length; i += 2) {
    const [err, ids] = results[i] ?? [new Error("no reply"), null];
    if (err) throw err;
    due.push(ids as string[]);
    const [err2, first] = results[i + 1] ?? [new Error("no reply"), null];
    if (err2) throw err2;
    const score = (first as string[])[1];
    if (score !== undefined && (next === null || Number(score) < next)) next = Number(score);
  }
  return { due, next };
}

/**
 * Waits of every partition whose deadline is at or before `now`: a pipelined ZCOUNT of
 * each deadline index, plus the entries of the parked slots that started by `now` (lua/
 * includes/parked-deadlines.lua). A running scheduler promotes a slot before it starts,
 * so those exist only when none sweeps; they are counted as their slot's string holds
 * them (an upper bound: a wait settled since it was parked counts until the promotion).
 */
export async function countDue(src: ReaderSource, now: number): Promise<number> {
  const partitions = src.keys.allPartitions().map((p) => src.keys.partition(p));
  const replies = await execBatch(
    src.redis,
    partitions.flatMap((k) => [
      { key: k.deadlines, add: (pl) => pl.zcount(k.deadlines, "-inf", now) },
      { key: k.parked, add: (pl) => pl.zrangebyscore(k.parked, "-inf", now) },
    ]) satisfies BatchCommand[],
  );
  let due = 0;
  const started: BatchCommand[] = [];
  replies.forEach(([err, value], i) => {
    if (err) throw err;
    const k = partitions[Math.floor(i / 2)] as (typeof partitions)[number];
    if (i % 2 === 0) due += Number(value);
    else
      for (const slot of value as string[])
        started.push({ key: k.parked, add: (pl) => pl.strlen(parkedSlotKey(k, slot)) });
  });
  if (started.length === 0) return due;
  for (const [err, bytes] of await execBatch(src.redis, started)) {
    if (err) throw err;
    // (an entry is a wait id's body)
    due += Math.floor(Number(bytes) / WAIT_BODY_LENGTH);
  }
  return due;
}

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

export async function scanDeadlines(src: ReaderSource, partitions: number[], o: ScanOptions): Promise<DeadlineScan> {
  const overdueBefore = o.now - o.graceMs;
  const until = o.now + o.lookaheadMs;
  const key = (p: number) => src.keys.partition(p).deadlines;
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
    const replies = await execBatch(src.redis, commands);
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
