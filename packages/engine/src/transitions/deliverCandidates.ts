/** deliverCandidates (lua/deliverCandidates-2.lua): read-only, the waits a direct delivery could resolve. */

import type { PartitionKeys } from "../keys.js";
import type { Reply } from "./replies.js";
import { clock, type ScriptCall, transitionCall } from "./run.js";

export interface DeliverCandidatesArgs {
  indexPrefix: string;
  /** the same prefix in the legacy layout (formats/index-members.ts legacyIndexKey), "" = none to read */
  legacyIndexPrefix: string;
  matchKeyPrefix: string;
  /** what the wait ids of the partition start with */
  idPrefix: string;
  limit: number;
  now?: number;
}

export function deliverCandidatesCall(k: PartitionKeys, a: DeliverCandidatesArgs): ScriptCall {
  return transitionCall("deliverCandidates", k, {
    indexPrefix: a.indexPrefix,
    mkPrefix: a.matchKeyPrefix,
    idPrefix: a.idPrefix,
    limit: a.limit,
    now: clock(a.now),
    legacyPrefix: a.legacyIndexPrefix,
  });
}

/** The candidates' wait ids. */
export function deliverCandidatesIds([, ids]: Reply): string[] {
  return (ids as string[]) ?? [];
}
