/** promoteDeadlines (lua/promoteDeadlines-3.lua): parked deadline slots into the deadline index, in one partition. */

import { waitIdPrefix } from "../formats/index-members.js";
import type { PartitionKeys } from "../keys.js";
import { Code, failure, type Reply } from "./replies.js";
import { clock, type ScriptCall, transitionCall } from "./run.js";

/** Most parked entries one call reads (the script reads them with one HMGET). */
export const PROMOTE_CALL_WAITS = 500;

export interface PromoteDeadlinesArgs {
  /** promote the slots starting at or before now + reachMs */
  reachMs: number;
  maxWaits?: number;
  now?: number;
}

export interface PromoteResult {
  /** waits moved into the deadline index */
  promoted: number;
  /** entries dropped: their wait settled, expired or moved its deadline */
  dropped: number;
  /** a slot within reach is left for the next call */
  more: boolean;
}

export function promoteDeadlinesCall(k: PartitionKeys, a: PromoteDeadlinesArgs): ScriptCall {
  return transitionCall("promoteDeadlines", k, {
    reachMs: a.reachMs,
    idPrefix: waitIdPrefix(k.partition),
    maxWaits: Math.min(a.maxWaits ?? PROMOTE_CALL_WAITS, 1000),
    now: clock(a.now),
  });
}

export function promoteDeadlinesResult([code, promoted, dropped, more]: Reply): PromoteResult {
  if (code !== Code.OK) throw failure(code);
  return { promoted: Number(promoted), dropped: Number(dropped), more: Number(more) === 1 };
}
