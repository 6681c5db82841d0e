/** deliverWaits (lua/deliverWaits-6.lua): waits of one partition resolved by direct delivery. */

import type { PartitionKeys } from "../keys.js";
import type { Reply } from "./replies.js";
import { clock, type ScriptCall, transitionCall } from "./run.js";

export interface DeliverWaitsArgs {
  /** encoded tenant of the caller */
  tenantPrefix: string;
  /** raw payload JSON */
  payload?: string;
  /** the resolutions' outcome @defaultValue "success" */
  outcome?: "success" | "failure";
  /** raw error JSON (a failure's) */
  error?: string;
  retentionMs: number;
  waitIds: string[];
  now?: number;
  /** the delivery's trace context text, written on the outbox entries ("" or absent: none) */
  trace?: string;
}

export function deliverWaitsCall(k: PartitionKeys, a: DeliverWaitsArgs): ScriptCall {
  return transitionCall("deliverWaits", k, {
    tenantPrefix: a.tenantPrefix,
    payload: a.payload ?? "",
    retentionMs: a.retentionMs,
    now: clock(a.now),
    outcome: a.outcome === "failure" ? "f" : "s",
    error: a.error ?? "",
    trace: a.trace ?? "",
    waitIds: a.waitIds,
  });
}

/** The ids of the waits it resolved. */
export function deliverWaitsIds([, ids]: Reply): string[] {
  return (ids as string[]) ?? [];
}
