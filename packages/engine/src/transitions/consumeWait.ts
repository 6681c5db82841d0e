/** consumeWait (lua/consumeWait-1.lua): the first claimer of a settled wait's continuation. */

import type { ConsumeResult, Consumption } from "@rendezvous/protocol";
import { waitOf } from "../formats/wait-record.js";
import type { PartitionKeys } from "../keys.js";
import { Code, failure, type Reply } from "./replies.js";
import { clock, type ScriptCall, transitionCall } from "./run.js";

export type { ConsumeResult };

export interface ConsumeWaitArgs {
  waitId: string;
  /** encoded tenant of the caller ("" = admin) */
  tenantPrefix: string;
  worker: string;
  now?: number;
}

export function consumeWaitCall(k: PartitionKeys, a: ConsumeWaitArgs): ScriptCall {
  return transitionCall("consumeWait", k, {
    waitId: a.waitId,
    tenantPrefix: a.tenantPrefix,
    worker: a.worker,
    now: clock(a.now),
  });
}

/** `first` is true for exactly one caller ever. @throws RendezvousError not_found, not_resolved */
export function consumeWaitResult(waitId: string, [code, first, raw]: Reply): ConsumeResult {
  if (code !== Code.OK) throw failure(code);
  const wait = waitOf(waitId, raw);
  return { first: first === 1, consumption: wait.consumption as Consumption, wait };
}
