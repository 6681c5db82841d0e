/**
 * Compaction of completed continuation jobs (docs/api.md, Continuations): a completed job
 * keeps its key and its place in the queue's `completed` set for the retention (a
 * re-dispatch of the same wait finds its twin and adds nothing), but not the whole Wait:
 * the wait record and its consumption are the truth. lua/compactContinuations-2.lua does
 * it per queue, a bounded number of jobs per call, from a cursor kept beside the queue's
 * keys; this names the keys (BullMQ's layout: `<queuePrefix>:<queue>:<suffix>`) and runs
 * the calls of several queues in one round trip (every queue of a deployment shares the
 * BullMQ prefix, a hash tag on a cluster: one slot).
 */
import type { RedisLike } from "./redis.js";
import { asReply } from "./transitions/replies.js";
import { keyedCall, runScript } from "./transitions/run.js";

/** The cursor's key of a queue: beside BullMQ's own keys, removed with them by `obliterate`. */
export function compactionCursorKey(queuePrefix: string, queue: string): string {
  return `${queuePrefix}:${queue}:rdv:compacted`;
}

export interface CompactionResult {
  queue: string;
  /** jobs reduced by this call */
  compacted: number;
  /** jobs passed (compacted, or left as they were) */
  examined: number;
  /** more jobs are due than the limit let this call take */
  more: boolean;
}

/**
 * One compaction call per queue, pipelined: each reduces at most `limit` of its completed
 * continuation jobs finished at or before `upTo` (ms since the epoch).
 */
export async function compactContinuations(
  redis: RedisLike,
  queuePrefix: string,
  queues: readonly string[],
  upTo: number,
  limit: number,
): Promise<CompactionResult[]> {
  if (queues.length === 0) return [];
  const pipeline = redis.pipeline();
  for (const queue of queues) {
    const call = keyedCall(
      "compactContinuations",
      { completed: `${queuePrefix}:${queue}:completed`, cursor: compactionCursorKey(queuePrefix, queue) },
      { jobPrefix: `${queuePrefix}:${queue}:`, upTo: Math.floor(upTo), limit: Math.max(1, Math.floor(limit)) },
    );
    void runScript(pipeline, call);
  }
  const replies = (await pipeline.exec()) ?? [];
  return queues.map((queue, i) => {
    const [err, value] = replies[i] ?? [new Error("no reply"), null];
    if (err) throw err;
    const [compacted, examined, more] = asReply(value, "compactContinuations") as number[];
    return { queue, compacted: Number(compacted), examined: Number(examined), more: more === 1 };
  });
}
