/**
 * Read-only views over the partitions: the evidence `explain` needs, backlog per
 * partition, and the stored partition count (the listing of waits lives in
 * list-waits.ts). Nothing here changes state.
 */

import type { Explanation, NearMiss, Wait, WaitState } from "@rendezvous/protocol";
import { RendezvousError } from "@rendezvous/protocol";
import type { ChainableCommander } from "ioredis";
import { execBatch } from "./batch.js";
import { afterParts, decodeParts, encodeParts } from "./encoding.js";
import { MATCHER_GROUP } from "./keys.js";
import { iso } from "./records.js";
import type { Rejection, Store } from "./store.js";

export { listWaits, type WaitFilter, type WaitPage } from "./list-waits.js";

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
export async function partitionBacklog(store: Store, partitions: number[]): Promise<PartitionBacklog[]> {
  const keys = partitions.map((p) => store.keys.partition(p).stream);
  const r1 = await execBatch(store.redis, [
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
    const group = Array.isArray(info)
      ? (info as unknown[][]).find((g) => g[g.indexOf("name") + 1] === MATCHER_GROUP)
      : undefined;
    const lastDelivered = group ? String(group[group.indexOf("last-delivered-id") + 1]) : "0-0";
    const lag = group ? group[group.indexOf("lag") + 1] : null;
    const [count, minPending] = Array.isArray(pend) ? (pend as [number, string | null]) : [0, null];
    return { key, lastDelivered, lag: typeof lag === "number" ? lag : null, pending: count, minPending };
  });
  // the first entry not yet delivered to any matcher, per partition
  const r2 = await execBatch(
    store.redis,
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

/**
 * Buffered (unmatched) events of the tenant with the wait's type but another
 * correlation id, or its correlation id with another type. Bounded: at most
 * `perPartition` inbox members per partition are read.
 */
export async function nearMisses(
  store: Store,
  tenant: string,
  eventType: string,
  correlationId: string,
  perPartition = 200,
): Promise<NearMiss[]> {
  const prefix = encodeParts(tenant);
  const results = await execBatch(
    store.redis,
    store.keys.allPartitions().map((p) => {
      const key = store.keys.partition(p).inbox;
      return { key, add: (pl) => pl.zrangebylex(key, `[${prefix}`, `(${prefix}\xff`, "LIMIT", 0, perPartition) };
    }),
  );
  const misses: NearMiss[] = [];
  for (const [err, members] of results) {
    if (err) throw err;
    for (const member of members as string[]) {
      const [, type = "", corr = ""] = decodeParts(member, 3);
      const sameType = type === eventType;
      const sameCorr = corr === correlationId;
      if (sameType === sameCorr) continue; // an exact match is not a miss; unrelated is not near
      const rest = afterParts(member, 3);
      const streamId = rest.slice(0, 26);
      const [, producer = "", id = ""] = decodeParts(rest.slice(26), 3);
      const ms = Number(streamId.split("-")[0]);
      misses.push({
        producer,
        id,
        type,
        correlationId: corr,
        acceptedAt: iso(ms),
        differs: sameType ? "correlationId" : "type",
      });
    }
  }
  return misses.sort((a, b) => (a.acceptedAt < b.acceptedAt ? 1 : -1)).slice(0, 20);
}

/**
 * Why a wait is where it is (docs/api.md, explain). For a pending wait: `backlog` when
 * its partition holds unprocessed events older than the threshold (takes
 * precedence), else `rejected_signal` when an event of its match key was refused,
 * else `correlation_mismatch` when near-miss events are buffered, else `no_signal`.
 */
export async function explainWait(
  store: Store,
  wait: Wait,
  opts: { backlogThresholdMs: number },
): Promise<Explanation> {
  if (wait.state !== "waiting") {
    return {
      state: wait.state,
      verdict: wait.state,
      details: { resolution: wait.resolution, consumption: wait.consumption, lateEvents: wait.lateEvents },
    };
  }
  const partition = store.keys.waitPartition(wait.id) as number;
  const [[backlog], rejections, misses] = await Promise.all([
    partitionBacklog(store, [partition]),
    store.rejections(wait.tenant, wait.eventType, wait.correlationId),
    nearMisses(store, wait.tenant, wait.eventType, wait.correlationId),
  ]);
  const b = backlog as PartitionBacklog;
  // refusals are evidence whenever they happened: an event refused before the wait existed is still the signal
  const relevantRejections: Rejection[] = rejections;
  const base = {
    expects: { eventType: wait.eventType, correlationId: wait.correlationId, since: wait.since },
    deadline: wait.deadline,
    backlog: b,
    rejections: relevantRejections,
    nearMisses: misses,
  };
  if ((b.oldestUnprocessedAgeMs ?? 0) > opts.backlogThresholdMs) {
    return { state: "waiting", verdict: "backlog", details: base };
  }
  if (relevantRejections.length > 0) return { state: "waiting", verdict: "rejected_signal", details: base };
  if (misses.length > 0) return { state: "waiting", verdict: "correlation_mismatch", details: base };
  return { state: "waiting", verdict: "no_signal", details: base };
}

/**
 * Stores the partition count on first start; refuses a process configured with
 * another one (a silent change would re-route every match key).
 * @throws RendezvousError invalid_config
 */
export async function ensurePartitionCount(store: Store): Promise<void> {
  const key = store.keys.metaKey;
  await store.redis.hsetnx(key, "partitions", String(store.keys.partitions));
  const stored = Number(await store.redis.hget(key, "partitions"));
  if (stored !== store.keys.partitions) {
    throw new RendezvousError(
      "invalid_config",
      `partitions: this deployment (prefix ${store.keys.prefix}) was created with ${stored} partitions; the config says ${store.keys.partitions}. Keep ${stored}: changing it re-routes every match key.`,
      { stored, configured: store.keys.partitions },
    );
  }
}

/** The stored partition count, or null before the first start. */
export async function storedPartitionCount(store: Store): Promise<number | null> {
  const raw = await store.redis.hget(store.keys.metaKey, "partitions");
  return raw === null ? null : Number(raw);
}
