/** cancelWait (lua/cancelWait-6.lua): a waiting wait resolved as cancelled. */

import type { Wait } from "@rendezvous/protocol";
import { waitOf } from "../formats/wait-record.js";
import type { PartitionKeys } from "../keys.js";
import { Code, failure, type Reply } from "./replies.js";
import { clock, type ScriptCall, transitionCall } from "./run.js";

export interface CancelWaitArgs {
  waitId: string;
  /** encoded tenant of the caller ("" = admin) */
  tenantPrefix: string;
  retentionMs: number;
  now?: number;
  /** the cancel's trace context text, written on the outbox entry ("" or absent: none) */
  trace?: string;
}

export function cancelWaitCall(k: PartitionKeys, a: CancelWaitArgs): ScriptCall {
  return transitionCall("cancelWait", k, {
    waitId: a.waitId,
    tenantPrefix: a.tenantPrefix,
    retentionMs: a.retentionMs,
    now: clock(a.now),
    trace: a.trace ?? "",
  });
}

/** The cancelled wait. @throws RendezvousError not_found, not_waiting (with the wait's state) */
export function cancelWaitResult(waitId: string, [code, raw]: Reply): Wait {
  if (code === Code.RESOLVED) return waitOf(waitId, raw);
  if (code === Code.NOT_WAITING) throw failure(code, { state: waitOf(waitId, raw).state });
  throw failure(code);
}
