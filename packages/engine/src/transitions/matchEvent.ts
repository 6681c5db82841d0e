/** matchEvent (lua/matchEvent-8.lua): the match for one stream entry of a partition. */

import { RendezvousError } from "@rendezvous/protocol";
import { type StreamEntry, toStreamEntries } from "../formats/stream-entries.js";
import type { PartitionKeys } from "../keys.js";
import { Code, failure, type Reply } from "./replies.js";
import { clock, type ScriptCall, transitionCall } from "./run.js";

export interface MatchResult {
  /** matched / buffered / late; duplicate = the event key belongs to another entry; missing = no record */
  status: "matched" | "buffered" | "late" | "duplicate" | "missing";
  /** every wait that took the event: the settled ones and the `collected` ones */
  matched: string[];
  /** the waits of `matched` that only collected the event (a count-N wait short of N: still waiting) */
  collected: string[];
  late: string[];
  /** with a trace: the registration trace context text of each matched wait ("" for none) */
  registrations?: string[];
  /** with a handoff: the outbox entries delivered to its consumer by the match (raw, to decode) */
  handed?: StreamEntry[];
}

export interface MatchEventArgs {
  streamId: string;
  eventKey: string;
  fanoutCap: number;
  retentionMs: number;
  now?: number;
  /** what the wait ids of the partition start with */
  idPrefix: string;
  /** the match's trace context text, written on the resolutions' outbox entries ("" or absent: none) */
  trace?: string;
  /** a consumer of an outbox group to deliver the outbox's new entries to (see `Handoff`) */
  handoff?: Handoff;
}

/**
 * Where a match that settled a wait delivers the outbox's undelivered entries, in the
 * same script: a consumer of the outbox's group (the dispatcher of the matcher's own
 * process), which then hands them out without a blocking read's wake-up.
 */
export interface Handoff {
  group: string;
  consumer: string;
}

export function matchEventCall(k: PartitionKeys, a: MatchEventArgs): ScriptCall {
  return transitionCall("matchEvent", k, {
    streamId: a.streamId,
    eventKey: a.eventKey,
    fanoutCap: a.fanoutCap,
    retentionMs: a.retentionMs,
    now: clock(a.now),
    idPrefix: a.idPrefix,
    handoff: a.handoff ? `${a.handoff.group} ${a.handoff.consumer}` : "",
    trace: a.trace ? [a.trace] : [],
  });
}

/** The waits a match settled: those that took the event less those that only collected it. */
export function settledCount(r: MatchResult): number {
  return r.matched.length - r.collected.length;
}

/** A match's status as the scripts reply it (m, b, l: matchEvent's and acceptEvents'). */
export function matchStatus(status: unknown): "matched" | "buffered" | "late" {
  if (status === "m") return "matched";
  if (status === "b") return "buffered";
  if (status === "l") return "late";
  throw new RendezvousError("internal", `match: status ${String(status)}`);
}

export function matchEventResult(reply: Reply): MatchResult {
  const [code, status, matched, late, collected, registrations] = reply;
  if (code === Code.DUPLICATE) return { status: "duplicate", matched: [], collected: [], late: [] };
  if (code === Code.NOT_FOUND) return { status: "missing", matched: [], collected: [], late: [] };
  if (code !== Code.OK) throw failure(code);
  const s = matchStatus(status);
  const result: MatchResult = {
    status: s,
    matched: (matched as string[]) ?? [],
    collected: (collected as string[]) ?? [],
    late: (late as string[]) ?? [],
  };
  if (Array.isArray(registrations) && registrations.length > 0) result.registrations = registrations as string[];
  const entries = handedOf(reply);
  if (entries) result.handed = entries;
  return result;
}

/** The outbox entries an OK reply handed over (its 7th element), read apart from the rest of the reply. */
export function handedOf(reply: Reply): StreamEntry[] | undefined {
  const handed = reply[6];
  return reply[0] === Code.OK && Array.isArray(handed) && handed.length > 0 ? toStreamEntries(handed) : undefined;
}
