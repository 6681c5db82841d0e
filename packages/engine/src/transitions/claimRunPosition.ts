/** claimRunPosition (lua/claimRunPosition-1.lua): first step of registration, in the run key's partition. */

import type { PartitionKeys } from "../keys.js";
import { Code, type Reply } from "./replies.js";
import { type ScriptCall, transitionCall } from "./run.js";

export interface ClaimRunPositionArgs {
  runPosition: string;
  /** the wait's partition, tagged (with the position digest it names the wait id) */
  wait: string;
  defHash: string;
}

export function claimRunPositionCall(k: PartitionKeys, a: ClaimRunPositionArgs): ScriptCall {
  return transitionCall("claimRunPosition", k, { runPosition: a.runPosition, wait: a.wait, defHash: a.defHash });
}

/** The partition tag of the wait that holds the run position under another definition, or null. */
export function claimRunPositionConflict([code, claimedTag]: Reply): string | null {
  return code === Code.CONFLICT ? String(claimedTag) : null;
}

/**
 * The partition tag the run position is bound to: the one just claimed, the one claimed
 * before with the same definition, or (conflict) the other definition's.
 */
export function claimRunPositionTag([, tag]: Reply): string {
  return String(tag);
}
