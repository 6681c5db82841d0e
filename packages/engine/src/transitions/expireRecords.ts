/** expireRecords (lua/expireRecords-6.lua): what has outlived its time in one partition, bounded per call. */

import { decodeParts } from "../encoding.js";
import type { PartitionKeys } from "../keys.js";
import type { Reply } from "./replies.js";
import { clock, type ScriptCall, transitionCall } from "./run.js";

export interface ExpireRecordsArgs {
  /** most members handled */
  limit: number;
  now?: number;
}

export interface Expired {
  handled: number;
  /** more are due */
  more: boolean;
  /** the settled waits removed: their run positions are forgotten next */
  waits: Array<{ tenant: string; runId: string; position: string; waitId: string }>;
  /** the tenant of each buffered event that left the inbox */
  bufferedTenants: string[];
}

export function expireRecordsCall(k: PartitionKeys, a: ExpireRecordsArgs): ScriptCall {
  return transitionCall("expireRecords", k, { limit: a.limit, now: clock(a.now) });
}

/**
 * The reply { OK, handled, more (0|1), expiredWaits: encoded match key, runId, position,
 * waitId each, expiredBuffered: the encoded match key of each buffered event removed }.
 */
export function expireRecordsResult([, handled, more, expired, buffered]: Reply): Expired {
  const flat = (expired ?? []) as string[];
  const waits: Expired["waits"] = [];
  for (let i = 0; i + 3 < flat.length; i += 4) {
    const [tenant = ""] = decodeParts(flat[i] as string, 1);
    waits.push({
      tenant,
      runId: flat[i + 1] as string,
      position: flat[i + 2] as string,
      waitId: flat[i + 3] as string,
    });
  }
  const bufferedTenants = ((buffered ?? []) as string[]).map((mk) => decodeParts(mk, 1)[0] ?? "");
  return { handled: Number(handled), more: more === 1, waits, bufferedTenants };
}
