/** rotateToken (lua/rotateToken-1.lua): a waiting wait gets a new completion token (the old one is invalid). */

import type { Wait } from "@rendezvous/protocol";
import { waitOf } from "../formats/wait-record.js";
import type { PartitionKeys } from "../keys.js";
import { Code, failure, type Reply } from "./replies.js";
import { clock, type ScriptCall, transitionCall } from "./run.js";

export interface RotateTokenArgs {
  waitId: string;
  /** encoded tenant of the caller ("" = admin) */
  tenantPrefix: string;
  /** hash of the new token (formats/completion-token.ts) */
  tokenHash: string;
  now?: number;
}

export function rotateTokenCall(k: PartitionKeys, a: RotateTokenArgs): ScriptCall {
  return transitionCall("rotateToken", k, {
    waitId: a.waitId,
    tenantPrefix: a.tenantPrefix,
    tokenHash: a.tokenHash,
    now: clock(a.now),
  });
}

/** The wait with its new token. @throws RendezvousError not_found, not_waiting (with the wait's state) */
export function rotateTokenResult(waitId: string, [code, raw]: Reply): Wait {
  if (code === Code.OK) return waitOf(waitId, raw);
  if (code === Code.NOT_WAITING) throw failure(code, { state: waitOf(waitId, raw).state });
  throw failure(code);
}
