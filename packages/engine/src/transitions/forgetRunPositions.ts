/** forgetRunPositions (lua/forgetRunPositions-1.lua): run-index entries of expired waits, in a run partition. */

import type { PartitionKeys } from "../keys.js";
import { type ScriptCall, transitionCall } from "./run.js";

export interface ForgetRunPositionsArgs {
  /** each run position with the partition tag of its expired wait */
  entries: Array<{ runPosition: string; tag: string }>;
}

export function forgetRunPositionsCall(k: PartitionKeys, a: ForgetRunPositionsArgs): ScriptCall {
  const pairs: string[] = [];
  for (const e of a.entries) pairs.push(e.runPosition, e.tag);
  return transitionCall("forgetRunPositions", k, { pairs });
}
