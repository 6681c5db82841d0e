/**
 * Compaction of completed continuation jobs (docs/api.md, Continuations): a completed job
 * keeps its key and its place in the queue's `completed` set for the retention (a
 * re-dispatch of the same wait finds its twin and adds nothing), but not the whole Wait:
 * the wait record and its consumption are the truth. lua/compactContinuations-2.lua does
 * it per queue, a bounded number of jobs per call, from a cursor kept beside the queue's
 * keys; this names the keys (BullMQ's layout: `<queuePrefix>:<queue>:<suffix>`) and runs
 * the calls of up to COMPACT_CHUNK queues in one round trip (every queue of a deployment shares the
 * BullMQ prefix, a hash tag on a cluster: one slot).
 */
import type { RedisLike } from "./redis.js";
import { asReply } from "./transitions/replies.js";
import { keyedCall, runScript } from "./transitions/run.js";

/** The cursor's key of a queue: beside BullMQ's own keys, removed with them by `obliterate`. */
export function compactionCursorKey(queuePrefix: string, queue: string): string {
  return `${queuePrefix}:${queue}:rdv:compacted`;
}

/** How far behind the cursor a call looks for late finishers (host clocks behind), by default. */
export const COMPACT_SKEW_MS = 60_000;

/** Calls per round trip: a round trip holds Redis for at most this many calls in a row. */
export const COMPACT_CHUNK = 16;

export interface CompactionResult {
  queue: string;
  /** jobs reduced by this call (ahead of the cursor and behind it) */
  compacted: number;
  /** jobs passed ahead of the cursor (compacted, or left as they were) */
  examined: number;
  /** more jobs are due than the limit let this call take */
  more: boolean;
  /** jobs passed behind the cursor, in its trailing window (late finishers) */
  rescanned: number;
}

export interface CompactionOptions {
  /** the trailing window behind the cursor, ms @defaultValue COMPACT_SKEW_MS */
  skewMs?: number;
  /** the caller's clock, ms since the epoch @defaultValue Date.now() */
  now?: number;
}

/**
 * One compaction call per queue, pipelined COMPACT_CHUNK calls per round trip: each
 * reduces at most `limit` of its completed continuation jobs finished at or before `upTo`
 * (ms since the epoch), and at most `limit` more found behind its cursor.
 */
export async function compactContinuations(
  redis: RedisLike,
  queuePrefix: string,
  queues: readonly string[],
  upTo: number,
  limit: number,
  options: CompactionOptions = {},
): Promise<CompactionResult[]> {
  const results: CompactionResult[] = [];
  for (let i = 0; i < queues.length; i += COMPACT_CHUNK) {
    results.push(...(await compactChunk(redis, queuePrefix, queues.slice(i, i + COMPACT_CHUNK), upTo, limit, options)));
  }
  return results;
}

async function compactChunk(
  redis: RedisLike,
  queuePrefix: string,
  queues: readonly string[],
  upTo: number,
  limit: number,
  { skewMs = COMPACT_SKEW_MS, now = Date.now() }: CompactionOptions,
): Promise<CompactionResult[]> {
  const pipeline = redis.pipeline();
  for (const queue of queues) {
    const call = keyedCall(
      "compactContinuations",
      { completed: `${queuePrefix}:${queue}:completed`, cursor: compactionCursorKey(queuePrefix, queue) },
      {
        jobPrefix: `${queuePrefix}:${queue}:`,
        upTo: Math.floor(upTo),
        limit: Math.max(1, Math.floor(limit)),
        skewMs: Math.max(0, Math.floor(skewMs)),
        now: Math.floor(now),
      },
    );
    void runScript(pipeline, call);
  }
  const replies = (await pipeline.exec()) ?? [];
  return queues.map((queue, i) => {
    const [err, value] = replies[i] ?? [new Error("no reply"), null];
    if (err) throw err;
    const [compacted, examined, more, rescanned] = asReply(value, "compactContinuations") as number[];
    return {
      queue,
      compacted: Number(compacted),
      examined: Number(examined),
      more: more === 1,
      rescanned: Number(rescanned),
    };
  });
}
