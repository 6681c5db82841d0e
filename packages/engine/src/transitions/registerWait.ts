/** registerWait (lua/registerWait-9.lua): second step of registration, in the match key's partition. */

import type { Wait } from "@rendezvous/protocol";
import { waitOf } from "../formats/wait-record.js";
import type { PartitionKeys } from "../keys.js";
import { Code, failure, type Reply } from "./replies.js";
import { clock, type ScriptCall, transitionCall } from "./run.js";

export interface RegisterWaitArgs {
  waitId: string;
  /** the definition part of the record (formats/wait-record.ts registrationRecord) */
  record: string;
  timeoutMs?: number;
  deadlineMs?: number;
  sinceMs?: number;
  retentionMs: number;
  now?: number;
  /** the index key of the record's match key (formats/index-members.ts indexKey): the script computes none */
  indexKey?: string;
}

export function registerWaitCall(k: PartitionKeys, a: RegisterWaitArgs): ScriptCall {
  return transitionCall("registerWait", k, {
    waitId: a.waitId,
    record: a.record,
    timeoutMs: a.timeoutMs ?? "",
    deadlineMs: a.deadlineMs ?? "",
    sinceMs: a.sinceMs ?? "",
    retentionMs: a.retentionMs,
    now: clock(a.now),
    indexKey: a.indexKey ?? "",
  });
}

/** The wait as registered now or before. @throws RendezvousError on any other code */
export function registerWaitResult(waitId: string, [code, raw]: Reply): { created: boolean; wait: Wait } {
  if (code !== Code.CREATED && code !== Code.EXISTS) throw failure(code);
  return { created: code === Code.CREATED, wait: waitOf(waitId, raw) };
}
