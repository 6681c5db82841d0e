/** completeByToken (lua/completeByToken-6.lua): a waiting wait completed or failed through its token. */

import { RendezvousError, type Wait } from "@rendezvous/protocol";
import { waitOf } from "../formats/wait-record.js";
import type { PartitionKeys } from "../keys.js";
import { Code, failure, type Reply } from "./replies.js";
import { clock, type ScriptCall, transitionCall } from "./run.js";

export interface CompleteByTokenArgs {
  waitId: string;
  /** hash of the presented token (formats/completion-token.ts) */
  tokenHash: string;
  outcome: "success" | "failure";
  /** raw payload JSON */
  payload?: string;
  /** raw error JSON (a failure's) */
  error?: string;
  retentionMs: number;
  now?: number;
}

export function completeByTokenCall(k: PartitionKeys, a: CompleteByTokenArgs): ScriptCall {
  return transitionCall("completeByToken", k, {
    waitId: a.waitId,
    tokenHash: a.tokenHash,
    outcome: a.outcome === "failure" ? "f" : "s",
    payload: a.payload ?? "",
    error: a.error ?? "",
    retentionMs: a.retentionMs,
    now: clock(a.now),
  });
}

/**
 * The resolved wait.
 * @throws RendezvousError token_invalid, not_waiting (with the wait's state), deadline_passed
 */
export function completeByTokenResult(waitId: string, [code, raw]: Reply): Wait {
  if (code === Code.RESOLVED) return waitOf(waitId, raw);
  if (code === Code.NOT_FOUND) throw new RendezvousError("token_invalid");
  if (code === Code.NOT_WAITING) throw failure(code, { state: waitOf(waitId, raw).state });
  throw failure(code);
}
