/**
 * `explain`: why a wait is where it is, from the evidence the partition reader reads
 * (backlog of its partition, refusals of its match key, near-miss buffered events).
 * Nothing here changes state.
 */

import type { Explanation, Wait } from "@rendezvous/protocol";
import type { PartitionBacklog } from "./reads/backlog.js";
import { PartitionReader } from "./reads/partition-reader.js";
import type { Rejection, Store } from "./store.js";

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
  const extras = tokenAndHeartbeat(wait);
  if (wait.state !== "waiting") {
    return {
      state: wait.state,
      verdict: wait.state,
      details: { resolution: wait.resolution, consumption: wait.consumption, lateEvents: wait.lateEvents, ...extras },
    };
  }
  const reader = new PartitionReader(store);
  const partition = store.keys.waitPartition(wait.id) as number;
  const [[backlog], rejections, misses] = await Promise.all([
    reader.backlog([partition]),
    store.rejections(wait.tenant, wait.eventType, wait.correlationId),
    reader.nearMisses(wait.tenant, wait.eventType, wait.correlationId),
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
    ...extras,
  };
  if ((b.oldestUnprocessedAgeMs ?? 0) > opts.backlogThresholdMs) {
    return { state: "waiting", verdict: "backlog", details: base };
  }
  if (relevantRejections.length > 0) return { state: "waiting", verdict: "rejected_signal", details: base };
  if (misses.length > 0) return { state: "waiting", verdict: "correlation_mismatch", details: base };
  return { state: "waiting", verdict: "no_signal", details: base };
}

/**
 * The token and heartbeat details of a wait: `token` always, `heartbeat` for a wait
 * registered with heartbeatMs (`overdue`: still waiting, its deadline passed — the
 * heartbeats stopped and the timeout is due).
 */
function tokenAndHeartbeat(wait: Wait): Record<string, unknown> {
  const out: Record<string, unknown> = { token: wait.token };
  if (wait.heartbeat) {
    const deadline = wait.deadline;
    out.heartbeat = {
      ...wait.heartbeat,
      deadline,
      overdue: wait.state === "waiting" && deadline !== null && Date.parse(deadline) < Date.now(),
    };
  }
  return out;
}
