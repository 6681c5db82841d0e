/** heartbeatWait (lua/heartbeatWait-2.lua): a heartbeat moves a waiting wait's deadline to now + heartbeatMs. */

import { RendezvousError, type Wait } from "@rendezvous/protocol";
import { waitOf } from "../formats/wait-record.js";
import type { PartitionKeys } from "../keys.js";
import { Code, failure, type Reply } from "./replies.js";
import { clock, type ScriptCall, transitionCall } from "./run.js";

export interface HeartbeatWaitArgs {
  waitId: string;
  /** encoded tenant of the caller ("" = admin, or a token call) */
  tenantPrefix: string;
  /** hash of the presented token (formats/completion-token.ts); absent for a host call */
  tokenHash?: string;
  now?: number;
}

export function heartbeatWaitCall(k: PartitionKeys, a: HeartbeatWaitArgs): ScriptCall {
  return transitionCall("heartbeatWait", k, {
    waitId: a.waitId,
    tenantPrefix: a.tenantPrefix,
    tokenHash: a.tokenHash ?? "",
    now: clock(a.now),
  });
}

/**
 * The wait with its new deadline.
 * @throws RendezvousError not_found (token_invalid for a token call), not_waiting, deadline_passed, heartbeat_disabled
 */
export function heartbeatWaitResult(waitId: string, [code, raw]: Reply, byToken: boolean): Wait {
  if (code === Code.OK) return waitOf(waitId, raw);
  if (code === Code.NOT_FOUND && byToken) throw new RendezvousError("token_invalid");
  if (code === Code.NOT_WAITING) throw failure(code, { state: waitOf(waitId, raw).state });
  throw failure(code);
}
