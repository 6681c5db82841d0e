/** recordRejection (lua/recordRejection-2.lua): a refused event remembered under its match key. */

import type { PartitionKeys } from "../keys.js";
import { clock, type ScriptCall, transitionCall } from "./run.js";

export interface RecordRejectionArgs {
  matchKey: string;
  /** JSON {pr, id?, reason, detail?} (formats/rejection-record.ts) */
  refusal: string;
  /** most refusals kept per match key */
  cap: number;
  keepMs: number;
  now?: number;
}

export function recordRejectionCall(k: PartitionKeys, a: RecordRejectionArgs): ScriptCall {
  return transitionCall("recordRejection", k, {
    matchKey: a.matchKey,
    refusal: a.refusal,
    cap: a.cap,
    keepMs: a.keepMs,
    now: clock(a.now),
  });
}
