/**
 * The wait records the Lua transitions keep (cjson with short field names, or the
 * compact text of a plain waiting wait) and their mapping to the API shape. Only this
 * module knows the short names.
 */

import type {
  CollectedEvent,
  EventRef,
  HistoryEntry,
  Outcome,
  Resolution,
  ResolutionKind,
  Wait,
  WaitState,
} from "@rendezvous/protocol";
import { decodeParts, readParts } from "../encoding.js";
import { iso } from "./iso.js";

/** An event reference inside a record. */
export interface RawEventRef {
  pr: string;
  id: string;
  at: number;
  sid: string;
}

/** An event a shaped wait took: with its payload and `x`, the number of its match key (1 = `mk`). */
export interface RawTakenEvent extends RawEventRef {
  pl?: string;
  x: number;
}

export interface RawWait {
  /** encoded match key (tenant, type, correlationId) */
  mk: string;
  /** any-of: the match keys of the other types */
  mx?: string[];
  /** any-of: the index keys of all its match keys (`mk` first): its index members' prefixes */
  ixs?: string[];
  /** any-of: 1 when its other match keys' index members are counted (formats/index-members.ts extraMembersField) */
  xc?: 1;
  /** count: the number of distinct events that resolve it (absent: 1) */
  n?: number;
  /** the match keys of the failure types */
  fk?: string[];
  /** the events collected so far (accepted order) */
  col?: RawTakenEvent[];
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
    /** event, timeout, cancel, deliver, token */
    k: "e" | "t" | "c" | "d" | "k";
    at: number;
    ev?: RawEventRef & { pl?: string; x?: number };
    dl?: number;
    pl?: string;
    /** "f": the resolution is a failure (absent: success) */
    o?: "f";
    /** raw error JSON of a failure */
    er?: string;
    /** a shaped wait's events (kind e) */
    evs?: RawTakenEvent[];
  };
  /** hash of the current completion token (formats/completion-token.ts), and when it was issued */
  tk?: string;
  ti?: number;
  /** heartbeatMs, heartbeats accepted, the last one's time */
  hb?: number;
  hbn?: number;
  hbl?: number;
  /** the registration's deadline, kept when a heartbeat first moves it */
  d0?: number;
  con?: { by: string; at: number };
  late?: RawEventRef[];
  h?: Array<{ at: number; w: string } & Record<string, unknown>>;
  /** the registration's trace context text (formats/trace-context.ts); not part of the API's Wait */
  tc?: string;
}

/** What separates a JSON record from the timeline entries appended after it (ASCII RS). */
const APPENDED = "\u001e";

/**
 * A stored wait record: JSON, possibly followed by timeline entries appended as text
 * (each RS then the entry's JSON: the last entries of its history), or the compact text
 * of a plain waiting wait ("<len>:<mk><len>:<r><len>:<p><ca>,<dl>,<sn>", lengths in
 * bytes; see decodeWait in lua/includes/wait-record.lua).
 */
export function parseWaitRecord(raw: string): RawWait {
  if (raw.startsWith("{")) {
    if (!raw.includes(APPENDED)) return JSON.parse(raw) as RawWait;
    const [record = "", ...appended] = raw.split(APPENDED);
    const wait = JSON.parse(record) as RawWait;
    wait.h = [...(wait.h ?? []), ...appended.map((entry) => JSON.parse(entry) as NonNullable<RawWait["h"]>[number])];
    return wait;
  }
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
  k: "token",
};

/** The kinds whose resolution has an outcome (success unless marked failed). */
const WITH_OUTCOME = new Set(["e", "d", "k"]);

function outcomeOf(k: unknown, o: unknown): Outcome | undefined {
  if (typeof k !== "string" || !WITH_OUTCOME.has(k)) return undefined;
  return o === "f" ? "failure" : "success";
}

function parseObject(raw: string | undefined): Record<string, unknown> | null {
  return raw === undefined || raw === "" ? null : (JSON.parse(raw) as Record<string, unknown>);
}

function eventRef(raw: RawEventRef): EventRef {
  return { producer: raw.pr, id: raw.id, acceptedAt: iso(raw.at), streamId: raw.sid };
}

/** The event type of match key number `x` of a wait (1 = its own). */
function typeOf(wait: RawWait, x: number): string {
  const mk = x === 1 ? wait.mk : (wait.mx?.[x - 2] ?? wait.mk);
  return decodeParts(mk, 3)[1] ?? "";
}

function isShaped(wait: RawWait): boolean {
  return wait.mx !== undefined || wait.n !== undefined || wait.fk !== undefined;
}

function collected(wait: RawWait, e: RawTakenEvent): CollectedEvent {
  return { ...eventRef(e), type: typeOf(wait, e.x) };
}

function resolution(wait: RawWait, raw: NonNullable<RawWait["res"]>): Resolution {
  const out: Resolution = { kind: KINDS[raw.k], at: iso(raw.at) };
  if (raw.ev) out.event = { ...eventRef(raw.ev), payload: parseObject(raw.ev.pl) };
  if (raw.dl !== undefined) out.deadline = iso(raw.dl);
  if (raw.k === "d" || raw.k === "k") out.payload = parseObject(raw.pl);
  const outcome = outcomeOf(raw.k, raw.o);
  if (outcome !== undefined) out.outcome = outcome;
  if (outcome === "failure") out.error = parseObject(raw.er);
  if (isShaped(wait)) {
    if (raw.k === "e" && raw.ev) {
      out.eventType = typeOf(wait, raw.ev.x ?? 1);
      out.events = (raw.evs ?? []).map((e) => ({ ...collected(wait, e), payload: parseObject(e.pl) }));
    } else if (raw.k === "t") {
      out.events = (wait.col ?? []).map((e) => collected(wait, e));
    }
  }
  return out;
}

/** The fields a shaped wait adds to its API view. */
function shapeFields(raw: RawWait): Partial<Wait> {
  if (!isShaped(raw)) return {};
  const types = [raw.mk, ...(raw.mx ?? [])].map((mk) => decodeParts(mk, 3)[1] ?? "");
  const out: Partial<Wait> = { eventTypes: types, count: raw.n ?? 1 };
  if (raw.fk) out.failureTypes = raw.fk.map((mk) => decodeParts(mk, 3)[1] ?? "");
  // the events taken: collected while waiting (or at a timeout / cancel), all of them once resolved by event
  const taken = raw.res?.k === "e" ? (raw.res.evs ?? []) : (raw.col ?? []);
  out.collected = taken.map((e) => collected(raw, e));
  return out;
}

function historyEntry(raw: { at: number; w: string } & Record<string, unknown>): HistoryEntry {
  const { at, w, k, ev, dl, j, o, ...rest } = raw;
  const entry: Record<string, unknown> = { at: iso(at), what: w, ...rest };
  if (typeof k === "string") entry.kind = KINDS[k as keyof typeof KINDS] ?? k;
  const outcome = w === "resolved" ? outcomeOf(k, o) : undefined;
  if (outcome !== undefined) entry.outcome = outcome;
  if (ev && typeof ev === "object") entry.event = eventRef(ev as RawEventRef);
  if (typeof dl === "number") entry.deadline = iso(dl);
  if (typeof j === "string") entry.externalJobId = j;
  return entry as HistoryEntry;
}

/** The API view of a wait record. */
export function toWait(id: string, raw: RawWait): Wait {
  const [tenant = "", eventType = "", correlationId = ""] = decodeParts(raw.mk, 3);
  const registered: HistoryEntry = { at: iso(raw.ca), what: "registered" };
  const registeredDeadline = raw.d0 ?? raw.dl;
  if (registeredDeadline !== undefined) registered.deadline = iso(registeredDeadline);
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
    resolution: raw.res ? resolution(raw, raw.res) : null,
    consumption: raw.con ? { by: raw.con.by, at: iso(raw.con.at) } : null,
    lateEvents: (raw.late ?? []).map(eventRef),
    history: [registered, ...(raw.h ?? []).map(historyEntry)],
    token: raw.ti === undefined ? null : { issuedAt: iso(raw.ti) },
    heartbeat:
      raw.hb === undefined
        ? null
        : { intervalMs: raw.hb, count: raw.hbn ?? 0, lastAt: raw.hbl === undefined ? null : iso(raw.hbl) },
    ...shapeFields(raw),
  };
}

/** The API view of a wait record as a script replies it (its stored text). */
export function waitOf(id: string, raw: unknown): Wait {
  return toWait(id, parseWaitRecord(String(raw)));
}

/**
 * The definition part of a new wait record, JSON {mk, r, p, j?, m?, tk?, hb?, mx?, ixs?,
 * n?, fk?, tc?} (encoded match key, runId, position, external job id, raw metadata JSON,
 * completion token hash, heartbeatMs; a shaped wait's other match keys, the index keys of
 * all of them, count, failure match keys; the registration's trace context text):
 * registerWait adds the rest. A record with a `tc` is never compact.
 */
export function registrationRecord(r: {
  matchKey: string;
  runId: string;
  position: string;
  externalJobId: string | undefined;
  metadata: string | undefined;
  tokenHash?: string | undefined;
  heartbeatMs?: number | undefined;
  /** a shaped wait: the match keys of its other types, its count, its failure types' match keys */
  otherMatchKeys?: string[] | undefined;
  /** with otherMatchKeys: the index keys of all the match keys, the wait's own first */
  indexKeys?: string[] | undefined;
  count?: number | undefined;
  failureMatchKeys?: string[] | undefined;
  /** the registration's trace context text (formats/trace-context.ts) */
  trace?: string | undefined;
}): string {
  const shape =
    r.otherMatchKeys !== undefined || r.count !== undefined || r.failureMatchKeys !== undefined
      ? { mx: r.otherMatchKeys, ixs: r.otherMatchKeys ? r.indexKeys : undefined, n: r.count, fk: r.failureMatchKeys }
      : {};
  return JSON.stringify({
    mk: r.matchKey,
    r: r.runId,
    p: r.position,
    j: r.externalJobId,
    m: r.metadata,
    tk: r.tokenHash,
    hb: r.heartbeatMs,
    ...shape,
    tc: r.trace || undefined,
  });
}
