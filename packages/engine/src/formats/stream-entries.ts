/**
 * The entry fields of a partition's two streams, as the Lua scripts write them:
 * - the event stream: `ks`, the encoded event keys one ingest call appended to the
 *   partition, concatenated (appendEvents), or a single event key in `k` (an entry
 *   form still read: stored data keeps it); `t`, when the events came with trace
 *   contexts, one length-prefixed part per event (formats/trace-context.ts);
 * - the outbox: `w`, the resolved wait's id, `k`, the resolution's kind, and `r`, the
 *   wait record as the settling script saved it (what the dispatcher hands out, read
 *   without a second look at the wait); entries written before `r` existed hold `w`
 *   and `k` only; `t`, the resolution's trace context text, when it has one.
 */
import type { Wait } from "@rendezvous/protocol";
import { splitEncodings } from "../encoding.js";
import { entryTraces, type TraceCarrier, traceOfText } from "./trace-context.js";
import { parseWaitRecord, toWait } from "./wait-record.js";

/** A stream entry as XREADGROUP / XAUTOCLAIM return it. */
export interface StreamEntry {
  id: string;
  /** field → value; null when the entry was trimmed while pending */
  fields: Record<string, string> | null;
}

/** An event of the event stream: its entry's id and its encoded event key. */
export interface StreamEvent {
  streamId: string;
  eventKey: string;
  /** the trace context the event was accepted with, when it had one */
  trace?: TraceCarrier;
}

/** An entry of the event stream with the events it holds. */
export interface EventEntry {
  id: string;
  events: StreamEvent[];
}

/** An entry of the outbox with the wait it names (null when the entry names none). */
export interface ResolutionEntry {
  id: string;
  waitId: string | null;
  /** the wait as settled (the API view of `r`); null for an entry without it: read the wait */
  wait: Wait | null;
  /** the resolution's trace context (the match's), when it has one */
  trace?: TraceCarrier;
  /** the wait's registration trace context (from `r`), when it has one */
  registration?: TraceCarrier;
}

/** The entries of an XREADGROUP / XAUTOCLAIM reply for one stream. */
export function toStreamEntries(raw: unknown): StreamEntry[] {
  if (!Array.isArray(raw)) return [];
  return raw.map((item) => {
    const [id, flat] = item as [string, string[] | null];
    if (!flat) return { id, fields: null };
    const fields: Record<string, string> = {};
    for (let i = 0; i + 1 < flat.length; i += 2) fields[flat[i] as string] = flat[i + 1] as string;
    return { id, fields };
  });
}

/** The events an event-stream entry holds (none for an entry trimmed while pending). */
export function eventsOfEntry(entry: StreamEntry): EventEntry {
  const f = entry.fields;
  if (f?.ks !== undefined) {
    const events: StreamEvent[] = splitEncodings(f.ks, 3).map((eventKey) => ({ streamId: entry.id, eventKey }));
    if (f.t !== undefined) {
      const traces = entryTraces(f.t, events.length);
      events.forEach((e, i) => {
        const trace = traces[i];
        if (trace) e.trace = trace;
      });
    }
    return { id: entry.id, events };
  }
  if (f?.k !== undefined) return { id: entry.id, events: [{ streamId: entry.id, eventKey: f.k }] };
  return { id: entry.id, events: [] };
}

/** The wait an outbox entry names, and the settled wait when the entry carries it. */
export function resolutionOfEntry(entry: StreamEntry): ResolutionEntry {
  const waitId = entry.fields?.w ? entry.fields.w : null;
  const record = entry.fields?.r;
  const raw = waitId !== null && record ? parseWaitRecord(record) : null;
  const out: ResolutionEntry = { id: entry.id, waitId, wait: raw && waitId !== null ? toWait(waitId, raw) : null };
  const trace = traceOfText(entry.fields?.t);
  if (trace) out.trace = trace;
  const registration = traceOfText(raw?.tc);
  if (registration) out.registration = registration;
  return out;
}
