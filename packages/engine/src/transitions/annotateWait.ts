/** annotateWait (lua/annotateWait-1.lua): what is not part of a wait's definition, recorded on its timeline. */

import type { Wait } from "@rendezvous/protocol";
import { waitOf } from "../formats/wait-record.js";
import type { PartitionKeys } from "../keys.js";
import { Code, failure, type Reply } from "./replies.js";
import { clock, type ScriptCall, transitionCall } from "./run.js";

export interface AnnotateWaitArgs {
  waitId: string;
  /** encoded tenant of the caller ("" = admin or internal) */
  tenantPrefix: string;
  what: string;
  /** JSON object merged into the history entry */
  detail: string;
  /** skip when the history already has this entry */
  once: boolean;
  now?: number;
}

export function annotateWaitCall(k: PartitionKeys, a: AnnotateWaitArgs): ScriptCall {
  return transitionCall("annotateWait", k, {
    waitId: a.waitId,
    tenantPrefix: a.tenantPrefix,
    what: a.what,
    detail: a.detail,
    once: a.once ? "1" : "",
    now: clock(a.now),
  });
}

/** The wait, annotated now or before. @throws RendezvousError not_found */
export function annotateWaitResult(waitId: string, [code, raw]: Reply): Wait {
  if (code !== Code.OK && code !== Code.EXISTS) throw failure(code);
  return waitOf(waitId, raw);
}
