/**
 * The records the Lua transitions keep (cjson, short field names) and their
 * mapping to the API shapes. Only this module knows the short names.
 */

import type {
  EventRecord,
  EventRef,
  EventStatus,
  HistoryEntry,
  Resolution,
  ResolutionKind,
  Wait,
  WaitState,
} from "@rendezvous/protocol";
import { decodeParts, readParts } from "./encoding.js";

/** An event reference inside a record. */
export interface RawEventRef {
  pr: string;
  id: string;
  at: number;
  sid: string;
}

export interface RawWait {
  /** encoded match key (tenant, type, correlationId) */
  mk: string;
  r: string;
  p: string;
  s: "w" | "r" | "t" | "c";
  ca: number;
  dl?: number;
  sn?: number;
  j?: string;
  /** raw metadata JSON */
  m?: string;
  res?: {
    k: "e" | "t" | "c" | "d";
    at: number;
    ev?: RawEventRef & { pl?: string };
    dl?: number;
    pl?: string;
  };
  con?: { by: string; at: number };
  late?: RawEventRef[];
  h?: Array<{ at: number; w: string } & Record<string, unknown>>;
}

export interface RawEvent {
  /** tenant, type, correlation id: only in records of earlier versions (mk holds them) */
  t?: string;
  pr: string;
  id: string;
  ty?: string;
  c?: string;
  /** the encoded match key: tenant, type, correlation id */
  mk: string;
  oa?: string;
  pl?: string;
  rt: number;
  sid: string;
  at: number;
  st: "p" | "m" | "b" | "l" | "x";
  mw?: string[];
  lf?: string[];
}

/**
 * A dedup record (field "d:<eventKey>" in the event key's partition):
 * "<content hash>|<match partition>". Plain text, so that the dedup step compares
 * two records as strings; earlier versions stored JSON {h, mp, ...}, still read.
 */
export function dedupRecord(contentHash: string, matchPartition: number): string {
  return `${contentHash}|${matchPartition}`;
}

/** The match partition a dedup record points at (where the event record lives). */
export function dedupMatchPartition(raw: string): number {
  if (raw.startsWith("{")) return (JSON.parse(raw) as { mp: number }).mp;
  return Number(raw.slice(raw.lastIndexOf("|") + 1));
}

/**
 * A stored wait record: JSON, or the compact text of a plain waiting wait
 * ("<len>:<mk><len>:<r><len>:<p><ca>,<dl>,<sn>", lengths in bytes; see decodeWait in
 * lua/includes/common.lua).
 */
export function parseWaitRecord(raw: string): RawWait {
  if (raw.startsWith("{")) return JSON.parse(raw) as RawWait;
  const buf = Buffer.from(raw);
  const { parts, end } = readParts(buf, 0, 3);
  const [ca = "", dl = "", sn = ""] = buf.subarray(end).toString().split(",");
  const wait: RawWait = {
    mk: parts[0] as string,
    r: parts[1] as string,
    p: parts[2] as string,
    s: "w",
    ca: Number(ca),
  };
  if (dl !== "") wait.dl = Number(dl);
  if (sn !== "") wait.sn = Number(sn);
  return wait;
}

const STATES: Record<RawWait["s"], WaitState> = { w: "waiting", r: "resolved", t: "timed_out", c: "cancelled" };
const KINDS: Record<NonNullable<RawWait["res"]>["k"], ResolutionKind> = {
  e: "event",
  t: "timeout",
  c: "cancel",
  d: "deliver",
};
const EVENT_STATUS: Record<RawEvent["st"], EventStatus> = {
  p: "pending",
  m: "matched",
  b: "buffered",
  l: "late",
  x: "expired",
};

/** ISO-8601 UTC with milliseconds. */
export function iso(ms: number): string {
  // events of one batch share their milliseconds: reuse the last answer
  if (ms !== lastIsoMs) {
    lastIsoMs = ms;
    lastIso = new Date(ms).toISOString();
  }
  return lastIso;
}
let lastIsoMs = Number.NaN;
let lastIso = "";

function parseObject(raw: string | undefined): Record<string, unknown> | null {
  return raw === undefined || raw === "" ? null : (JSON.parse(raw) as Record<string, unknown>);
}

function eventRef(raw: RawEventRef): EventRef {
  return { producer: raw.pr, id: raw.id, acceptedAt: iso(raw.at), streamId: raw.sid };
}

function resolution(raw: NonNullable<RawWait["res"]>): Resolution {
  const out: Resolution = { kind: KINDS[raw.k], at: iso(raw.at) };
  if (raw.ev) out.event = { ...eventRef(raw.ev), payload: parseObject(raw.ev.pl) };
  if (raw.dl !== undefined) out.deadline = iso(raw.dl);
  if (raw.k === "d") out.payload = parseObject(raw.pl);
  return out;
}

function historyEntry(raw: { at: number; w: string } & Record<string, unknown>): HistoryEntry {
  const { at, w, k, ev, dl, j, ...rest } = raw;
  const entry: Record<string, unknown> = { at: iso(at), what: w, ...rest };
  if (typeof k === "string") entry.kind = KINDS[k as keyof typeof KINDS] ?? k;
  if (ev && typeof ev === "object") entry.event = eventRef(ev as RawEventRef);
  if (typeof dl === "number") entry.deadline = iso(dl);
  if (typeof j === "string") entry.externalJobId = j;
  return entry as HistoryEntry;
}

/** The API view of a wait record. */
export function toWait(id: string, raw: RawWait): Wait {
  const [tenant = "", eventType = "", correlationId = ""] = decodeParts(raw.mk, 3);
  const registered: HistoryEntry = { at: iso(raw.ca), what: "registered" };
  if (raw.dl !== undefined) registered.deadline = iso(raw.dl);
  if (raw.sn !== undefined) registered.since = iso(raw.sn);
  return {
    id,
    tenant,
    runId: raw.r,
    position: raw.p,
    eventType,
    correlationId,
    state: STATES[raw.s],
    createdAt: iso(raw.ca),
    deadline: raw.dl === undefined ? null : iso(raw.dl),
    since: raw.sn === undefined ? null : iso(raw.sn),
    externalJobId: raw.j ?? null,
    metadata: parseObject(raw.m),
    resolution: raw.res ? resolution(raw.res) : null,
    consumption: raw.con ? { by: raw.con.by, at: iso(raw.con.at) } : null,
    lateEvents: (raw.late ?? []).map(eventRef),
    history: [registered, ...(raw.h ?? []).map(historyEntry)],
  };
}

/** The API view of an event record. */
export function toEventRecord(raw: RawEvent, at: number = raw.at): EventRecord {
  let status = EVENT_STATUS[raw.st];
  // A buffered event past its retention reads as expired even before the sweeper ran.
  if (status === "buffered" && raw.at + raw.rt < at) status = "expired";
  const [tenant, type, correlationId] =
    raw.t !== undefined && raw.ty !== undefined && raw.c !== undefined
      ? [raw.t, raw.ty, raw.c]
      : decodeParts(raw.mk, 3);
  return {
    id: raw.id,
    tenant: tenant as string,
    producer: raw.pr,
    type: type as string,
    correlationId: correlationId as string,
    occurredAt: raw.oa ?? null,
    acceptedAt: iso(raw.at),
    streamId: raw.sid,
    status,
    matchedWaits: raw.mw ?? [],
    lateFor: raw.lf ?? [],
  };
}
