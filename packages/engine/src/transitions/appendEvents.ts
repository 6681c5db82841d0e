/** appendEvents (lua/appendEvents-3.lua): second step of ingest, in the match keys' partition. */

import type { PartitionKeys } from "../keys.js";
import { Packer } from "./packer.js";
import { Code } from "./replies.js";
import { clock, type ScriptCall, transitionCall } from "./run.js";

export interface AppendEventsArgs {
  keepMs: number;
  now?: number;
  /** each event's key, record head (formats/event-record.ts) and trace context text ("" or absent: none), in order */
  events: Array<{ eventKey: string; head: string; trace?: string }>;
}

/** Per event: appended (under the call's stream id), or the record stored before under its key. */
export type Appended = { streamId: string; existing?: undefined } | { existing: string; streamId?: undefined };

export function appendEventsCall(k: PartitionKeys, a: AppendEventsArgs): ScriptCall {
  return transitionCall("appendEvents", k, appendArgs(a));
}

/** appendEvents' arguments: keepMs, now, events, traces (acceptEvents, ingestEvents and claimAppendEvents send the same). */
export function appendArgs(a: AppendEventsArgs): { keepMs: number; now: string; events: Buffer; traces: Buffer[] } {
  return { keepMs: a.keepMs, now: clock(a.now), ...packedEvents(a.events) };
}

/** The events and traces arguments of appendEvents. */
function packedEvents(events: AppendEventsArgs["events"]): { events: Buffer; traces: Buffer[] } {
  let chars = 0;
  for (const e of events) chars += e.eventKey.length + e.head.length + 10;
  const packed = new Packer(chars * 3);
  let traced = false;
  for (const e of events) {
    packed.field(e.eventKey).field(e.head);
    if (e.trace) traced = true;
  }
  // the traces argument only when an event has one: nothing more to send or store otherwise
  const traces: Buffer[] = [];
  if (traced) {
    const t = new Packer(events.length * 64);
    for (const e of events) t.field(e.trace ?? "");
    traces.push(t.done());
  }
  return { events: packed.done(), traces };
}

/** The reply { streamId, one code digit per event, the stored records of the EXISTS ones }, per event. */
export function appendEventsResults(reply: unknown): Appended[] {
  const [sid, codes, records] = reply as [string, string, string[]];
  let r = 0;
  return Array.from(String(codes), (c) =>
    Number(c) === Code.EXISTS ? { existing: String(records[r++]) } : { streamId: String(sid) },
  );
}
