/**
 * Unprocessed events per partition stream: what `explain`, the console and the
 * `rendezvous_stream_lag` gauges report.
 */
import type { ChainableCommander } from "ioredis";
import { execBatch } from "../batch.js";
import { findGroup } from "../formats/consumer-groups.js";
import { iso } from "../formats/iso.js";
import { MATCHER_GROUP } from "../keys.js";
import type { ReaderSource } from "./source.js";

/** Unprocessed events of a partition's stream. */
export interface PartitionBacklog {
  partition: number;
  /** entries not yet delivered to any matcher */
  undelivered: number;
  /** entries delivered, not yet acknowledged */
  pending: number;
  /** accepted time of the oldest unprocessed entry, or null */
  oldestUnprocessedAt: string | null;
  /** its age in ms (Redis clock), or null */
  oldestUnprocessedAgeMs: number | null;
}

/** Backlog of the given partitions: two pipelined round trips for all (per slot on a cluster). */
export async function partitionBacklog(src: ReaderSource, partitions: number[]): Promise<PartitionBacklog[]> {
  const keys = partitions.map((p) => src.keys.partition(p).stream);
  const r1 = await execBatch(src.redis, [
    { key: null, add: (p) => p.time() },
    ...keys.flatMap((key) => [
      { key, add: (p: ChainableCommander) => p.xinfo("GROUPS", key) },
      { key, add: (p: ChainableCommander) => p.xpending(key, MATCHER_GROUP) },
    ]),
  ]);
  const [sec, usec] = (r1[0]?.[1] ?? ["0", "0"]) as [string, string];
  const now = Number(sec) * 1000 + Math.floor(Number(usec) / 1000);
  const state = keys.map((key, i) => {
    const [, info] = r1[1 + 2 * i] ?? [null, null];
    const [, pend] = r1[2 + 2 * i] ?? [null, null];
    const group = findGroup(info, MATCHER_GROUP);
    const lastDelivered = group ? group.lastDeliveredId : "0-0";
    const [count, minPending] = Array.isArray(pend) ? (pend as [number, string | null]) : [0, null];
    return { key, lastDelivered, lag: group ? group.lag : null, pending: count, minPending };
  });
  // the first entry not yet delivered to any matcher, per partition
  const r2 = await execBatch(
    src.redis,
    state.map((st) => ({ key: st.key, add: (p) => p.xrange(st.key, `(${st.lastDelivered}`, "+", "COUNT", 1) })),
  );
  return partitions.map((partition, i) => {
    const st = state[i] as (typeof state)[number];
    const [, next] = r2[i] ?? [null, null];
    const firstUndelivered = Array.isArray(next) && next.length > 0 ? String((next[0] as [string])[0]) : null;
    const undelivered = st.lag ?? (firstUndelivered ? -1 : 0);
    const candidates = [st.minPending, firstUndelivered].filter((x): x is string => typeof x === "string" && x !== "");
    const oldestMs = candidates.length ? Math.min(...candidates.map((id) => Number(id.split("-")[0]))) : null;
    return {
      partition,
      undelivered,
      pending: st.pending,
      oldestUnprocessedAt: oldestMs === null ? null : iso(oldestMs),
      oldestUnprocessedAgeMs: oldestMs === null ? null : Math.max(0, now - oldestMs),
    };
  });
}
