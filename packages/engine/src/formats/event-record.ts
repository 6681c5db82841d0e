/**
 * The records of the events hash of a partition (cjson, short field names) and their
 * mapping to the API shapes. Only this module knows the field names of that hash and
 * the short names of its records.
 */

import type { EventInput, EventRecord, EventStatus } from "@rendezvous/protocol";
import { decodeParts } from "../encoding.js";
import { iso } from "./iso.js";

export interface RawEvent {
  /** tenant, type, correlation id: only in records of the long form, still read (mk holds them) */
  t?: string;
  pr: string;
  id: string;
  ty?: string;
  c?: string;
  /** the encoded match key: tenant, type, correlation id */
  mk: string;
  /** the wait-index key of mk (formats/index-members.ts indexKey), computed at ingest; absent in older records */
  ix?: string;
  /** the legacy wait-index key of mk (legacyIndexKey); older records carry it alone, or neither */
  ik?: string;
  oa?: string;
  pl?: string;
  rt: number;
  sid: string;
  at: number;
  st: "p" | "m" | "b" | "l" | "x";
  mw?: string[];
  /** the waits of `mw` that only collected the event (count-N waits short of N), as the match answers them */
  mc?: string[];
  lf?: string[];
}

/** The field of the events hash (match key's partition) that holds an event record. */
export function eventField(eventKey: string): string {
  return `e:${eventKey}`;
}

/** The field of the events hash (event key's partition) that holds a dedup record. */
export function dedupField(eventKey: string): string {
  return `d:${eventKey}`;
}

/**
 * A dedup record (field "d:<eventKey>" in the event key's partition):
 * "<content hash>|<match partition>". Plain text, so that the dedup step compares
 * two records as strings; a dedup record in JSON {h, mp, ...} is read as well.
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
 * The part of every event record of one producer's batch that is the same for all of
 * them, for `eventRecordHead` (tenant, type and correlation id are not repeated: the
 * encoded match key holds them).
 */
export function eventRecordPrefix(producer: string): string {
  return `{"pr":${JSON.stringify(producer)},"id":`;
}

/**
 * The event record JSON {pr, id, mk, ix, ik, oa?, pl?, rt} without its closing brace:
 * appendEvents completes it with the stream id, so no script decodes or encodes it.
 * `ix` is the wait-index key of the match key (`indexKey`) and `ik` its legacy one
 * (`legacyIndexKey`), so that matchEvent computes no digest (it computes them for
 * records without them). A record with `ix` and no `ik` says the deployment's indexes
 * hold no legacy member: the match reads no legacy range for it.
 * The payload is kept as canonical JSON text (`pl`). Tenant, type and correlation id
 * are read from the encoded match key `mk` (records of the long form also carry them
 * as t, ty and c; `toEventRecord` reads both).
 */
export function eventRecordHead(
  prefix: string,
  item: {
    input: EventInput;
    matchKey: string;
    indexKey: string;
    legacyIndexKey: string | undefined;
    payloadJson: string | undefined;
  },
  retention: number,
): string {
  const e = item.input;
  const j = JSON.stringify;
  let head = `${prefix}${j(e.id)},"mk":${j(item.matchKey)},"ix":${j(item.indexKey)}`;
  if (item.legacyIndexKey !== undefined) head += `,"ik":${j(item.legacyIndexKey)}`;
  if (e.occurredAt !== undefined) head += `,"oa":${j(e.occurredAt)}`;
  if (item.payloadJson !== undefined) head += `,"pl":${j(item.payloadJson)}`;
  return `${head},"rt":${retention}`;
}

/**
 * Canonical JSON (RFC 8785) of {type, correlationId, occurredAt?, payload?}, the
 * content that dedup compares, built around the already canonical payload text
 * (the same text `canonicalJson` gives for the whole object: keys in sorted order).
 */
export function canonicalContent(e: EventInput, payloadJson: string | undefined): string {
  const j = JSON.stringify;
  let out = `{"correlationId":${j(e.correlationId)}`;
  if (e.occurredAt !== undefined) out += `,"occurredAt":${j(e.occurredAt)}`;
  if (payloadJson !== undefined) out += `,"payload":${payloadJson}`;
  return `${out},"type":${j(e.type)}}`;
}

const EVENT_STATUS: Record<RawEvent["st"], EventStatus> = {
  p: "pending",
  m: "matched",
  b: "buffered",
  l: "late",
  x: "expired",
};

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

/** The API view of a stored event record's JSON text. */
export function parseEventRecord(raw: string, at?: number): EventRecord {
  return toEventRecord(JSON.parse(raw) as RawEvent, at);
}

/** The API view of an event just appended (no record read back: it is still pending). */
export function acceptedEventRecord(
  tenant: string,
  producer: string,
  e: EventInput,
  acceptedAt: string,
  streamId: string,
): EventRecord {
  return {
    id: e.id,
    tenant,
    producer,
    type: e.type,
    correlationId: e.correlationId,
    occurredAt: e.occurredAt ?? null,
    acceptedAt,
    streamId,
    status: "pending",
    matchedWaits: [],
    lateFor: [],
  };
}
