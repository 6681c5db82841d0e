/**
 * timeoutWait (lua/timeoutWait-8.lua): waits of one partition timed out by the event-time
 * rule, each judged on its own, in one call (the group's state and the scan of unprocessed
 * entries read once for all of them).
 */

import { RendezvousError, type Wait } from "@rendezvous/protocol";
import { type TraceCarrier, traceOfText } from "../formats/trace-context.js";
import { parseWaitRecord, toWait, waitOf } from "../formats/wait-record.js";
import { MATCHER_GROUP, type PartitionKeys } from "../keys.js";
import { Code, failure, type Reply } from "./replies.js";
import { clock, type ScriptCall, transitionCall } from "./run.js";

/**
 * What `timeout` did. `backlog`: not now, an event accepted at or before the deadline is
 * still unprocessed (one of the wait's match key, or more than 100 events or stream
 * entries of its partition): retry shortly.
 */
export type TimeoutResult =
  | { outcome: "timed_out"; wait: Wait; registration?: TraceCarrier }
  | { outcome: "not_waiting"; wait: Wait }
  | { outcome: "not_found" }
  | { outcome: "not_due"; deadline: number | null }
  | { outcome: "backlog"; deadline: number };

export interface TimeoutWaitArgs {
  /** one or more, all of partition `k` */
  waitIds: readonly string[];
  retentionMs: number;
  now?: number;
}

export function timeoutWaitCall(k: PartitionKeys, a: TimeoutWaitArgs): ScriptCall {
  return transitionCall("timeoutWait", k, {
    retentionMs: a.retentionMs,
    now: clock(a.now),
    group: MATCHER_GROUP,
    waitIds: a.waitIds,
  });
}

/** The outcome of each of the call's waits, in the order of `waitIds`. */
export function timeoutWaitResults(waitIds: readonly string[], reply: unknown): TimeoutResult[] {
  const pairs = reply as unknown[];
  if (!Array.isArray(pairs) || pairs.length !== 2 * waitIds.length) {
    throw new RendezvousError("internal", "timeoutWait: malformed reply");
  }
  return waitIds.map((id, i) => timeoutWaitResult(id, [Number(pairs[2 * i]), pairs[2 * i + 1]]));
}

function timeoutWaitResult(waitId: string, [code, value]: Reply): TimeoutResult {
  switch (code) {
    case Code.RESOLVED: {
      // one parse for the Wait and the registration's trace context
      const raw = parseWaitRecord(String(value));
      const registration = traceOfText(raw.tc);
      const wait = toWait(waitId, raw);
      return registration ? { outcome: "timed_out", wait, registration } : { outcome: "timed_out", wait };
    }
    case Code.NOT_WAITING:
      return { outcome: "not_waiting", wait: waitOf(waitId, value) };
    case Code.NOT_FOUND:
      return { outcome: "not_found" };
    case Code.NOT_DUE:
      return { outcome: "not_due", deadline: value === "" ? null : Number(value) };
    case Code.BACKLOG:
      return { outcome: "backlog", deadline: Number(value) };
    default:
      throw failure(code);
  }
}
