/** matchEvent (lua/matchEvent-8.lua): the match for one stream entry of a partition. */

import { RendezvousError } from "@rendezvous/protocol";
import type { PartitionKeys } from "../keys.js";
import { Code, failure, type Reply } from "./replies.js";
import { clock, type ScriptCall, transitionCall } from "./run.js";

export interface MatchResult {
  /** matched / buffered / late; duplicate = the event key belongs to another entry; missing = no record */
  status: "matched" | "buffered" | "late" | "duplicate" | "missing";
  matched: string[];
  late: string[];
}

export interface MatchEventArgs {
  streamId: string;
  eventKey: string;
  fanoutCap: number;
  retentionMs: number;
  now?: number;
  /** what the wait ids of the partition start with */
  idPrefix: string;
}

export function matchEventCall(k: PartitionKeys, a: MatchEventArgs): ScriptCall {
  return transitionCall("matchEvent", k, {
    streamId: a.streamId,
    eventKey: a.eventKey,
    fanoutCap: a.fanoutCap,
    retentionMs: a.retentionMs,
    now: clock(a.now),
    idPrefix: a.idPrefix,
  });
}

export function matchEventResult([code, status, matched, late]: Reply): MatchResult {
  if (code === Code.DUPLICATE) return { status: "duplicate", matched: [], late: [] };
  if (code === Code.NOT_FOUND) return { status: "missing", matched: [], late: [] };
  if (code !== Code.OK) throw failure(code);
  const s = status === "m" ? "matched" : status === "b" ? "buffered" : status === "l" ? "late" : null;
  if (!s) throw new RendezvousError("internal", `matchEvent: status ${String(status)}`);
  return { status: s, matched: (matched as string[]) ?? [], late: (late as string[]) ?? [] };
}
