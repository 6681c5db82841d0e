/**
 * acceptEvents (lua/acceptEvents-9.lua): appendEvents and the match of what it appended
 * in one step, the ingest of `rendezvous start` (docs/architecture.md, "Accept and
 * match in one step").
 */

import { type StreamEntry, toStreamEntries } from "../formats/stream-entries.js";
import type { PartitionKeys } from "../keys.js";
import { type AppendEventsArgs, type Appended, appendArgs, appendEventsResults } from "./appendEvents.js";
import { type Handoff, type MatchResult, matchStatus } from "./matchEvent.js";
import { type ScriptCall, transitionCall } from "./run.js";

export interface AcceptEventsArgs extends AppendEventsArgs {
  fanoutCap: number;
  retentionMs: number;
  /** what the wait ids of the partition start with */
  idPrefix: string;
  /** the stream's matchers group and this process's matcher consumer */
  matchers: Handoff;
  /** the dispatcher consumer to deliver the new outbox entries to (see `Handoff`) */
  handoff?: Handoff;
}

/** What one acceptEvents call did: the appends, and the matches when it matched. */
export interface Accepted {
  appended: Appended[];
  /** one per appended event, in the order of the call's events; absent: left to the matcher */
  matches?: MatchResult[];
  /** the outbox entries delivered to the handoff's consumer (less those whose jobs the call added) */
  handed?: StreamEntry[];
  /** ingestDispatchEvents: the continuation jobs the call added */
  dispatched?: number;
}

const pair = (h: Handoff): string => `${h.group} ${h.consumer}`;

/**
 * The most waits a call's matches may resolve (events × fan-out cap): a call with more
 * events than this allows only appends, and its entry goes to the matcher, whose scripts
 * are one event each (a script holds Redis while it runs).
 */
export const ACCEPT_MATCH_BUDGET = 1_600;

/** The most events a call matches with a fan-out cap of `fanoutCap` (ACCEPT_MATCH_BUDGET). */
export function matchUpTo(fanoutCap: number): number {
  return Math.max(1, Math.floor(ACCEPT_MATCH_BUDGET / fanoutCap));
}

export function acceptEventsCall(k: PartitionKeys, a: AcceptEventsArgs): ScriptCall {
  return transitionCall("acceptEvents", k, acceptArgs(a));
}

/** acceptEvents' arguments (ingestEvents' first nine and its traces are the same). */
export function acceptArgs(a: AcceptEventsArgs) {
  return {
    ...appendArgs(a),
    fanoutCap: a.fanoutCap,
    retentionMs: a.retentionMs,
    idPrefix: a.idPrefix,
    matchers: pair(a.matchers),
    handoff: a.handoff ? pair(a.handoff) : "",
    matchUpTo: matchUpTo(a.fanoutCap),
  };
}

export function acceptEventsResult(reply: unknown): Accepted {
  const r = reply as [string, string, string[], unknown[]?, unknown[]?, number?];
  const appended = appendEventsResults(r);
  const accepted: Accepted = { appended };
  const matches = r[3];
  if (Array.isArray(matches)) {
    accepted.matches = matches.map((m) => {
      const [status, matched, late, collected] = m as [string, string[], string[], string[]];
      return {
        status: matchStatus(status),
        matched: matched ?? [],
        late: late ?? [],
        collected: collected ?? [],
      };
    });
  }
  const handed = r[4];
  if (Array.isArray(handed) && handed.length > 0) accepted.handed = toStreamEntries(handed);
  if (typeof r[5] === "number" && r[5] > 0) accepted.dispatched = r[5];
  return accepted;
}
