/**
 * Trace contexts (W3C Trace Context) as rendezvous keeps them: the one owner of their
 * stored text. A context is a `traceparent` (always the 55-character version-00 form)
 * and an optional `tracestate`; its stored text is the traceparent followed at once by
 * the tracestate (so the first 55 characters are the traceparent). It is kept in the
 * wait record (`tc`), in an event stream entry (`t`: one length-prefixed part per event)
 * and in an outbox entry (`t`).
 */

import { readParts } from "../encoding.js";

/** A W3C trace context as headers carry it. */
export interface TraceCarrier {
  traceparent: string;
  tracestate?: string;
}

/** The W3C bound on a tracestate header value. */
export const MAX_TRACESTATE_CHARS = 512;

const TRACEPARENT_LENGTH = 55;
const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-|$)/;
const ZERO_TRACE = "00000000000000000000000000000000";
const ZERO_SPAN = "0000000000000000";
/** printable ASCII, the characters a tracestate may hold */
const TRACESTATE = /^[\x20-\x7e]*$/;

function headerText(value: unknown): string | undefined {
  if (typeof value === "string") return value;
  if (Array.isArray(value) && value.every((v) => typeof v === "string")) return value.join(",");
  return undefined;
}

/**
 * The trace context of a request's `traceparent` / `tracestate` headers, or undefined
 * when the traceparent is missing or malformed (ignored, never an error). A traceparent
 * of a later version is read as version 00, as the W3C recommendation says; a version-00
 * one must end after its flags. A tracestate over 512 characters, or with characters
 * outside printable ASCII, is dropped.
 */
export function traceCarrierOf(traceparent: unknown, tracestate?: unknown): TraceCarrier | undefined {
  const tp = headerText(traceparent)?.trim().toLowerCase();
  if (tp === undefined) return undefined;
  const m = TRACEPARENT.exec(tp);
  if (!m) return undefined;
  const [, version, traceId, spanId, flags, rest] = m as unknown as [string, string, string, string, string, string];
  if (version === "ff" || traceId === ZERO_TRACE || spanId === ZERO_SPAN) return undefined;
  if (version === "00" && rest !== "") return undefined;
  const carrier: TraceCarrier = { traceparent: `00-${traceId}-${spanId}-${flags}` };
  const ts = headerText(tracestate)?.trim();
  if (ts && ts.length <= MAX_TRACESTATE_CHARS && TRACESTATE.test(ts)) carrier.tracestate = ts;
  return carrier;
}

/** The stored text of a trace context ("" for none). */
export function traceText(carrier: TraceCarrier | undefined): string {
  if (!carrier) return "";
  return carrier.tracestate ? carrier.traceparent + carrier.tracestate : carrier.traceparent;
}

/** The trace context of a stored text (undefined for "" or a text that is none). */
export function traceOfText(text: string | undefined | null): TraceCarrier | undefined {
  if (!text || text.length < TRACEPARENT_LENGTH) return undefined;
  const traceparent = text.slice(0, TRACEPARENT_LENGTH);
  if (!TRACEPARENT.test(traceparent)) return undefined;
  return text.length > TRACEPARENT_LENGTH
    ? { traceparent, tracestate: text.slice(TRACEPARENT_LENGTH) }
    : { traceparent };
}

/**
 * The per-event trace contexts of an event stream entry's `t` field (one length-prefixed
 * part per event), `count` of them; undefined where an event has none.
 */
export function entryTraces(field: string, count: number): Array<TraceCarrier | undefined> {
  try {
    return readParts(Buffer.from(field), 0, count).parts.map(traceOfText);
  } catch {
    // a malformed field carries no contexts: the events are matched all the same
    return new Array(count).fill(undefined);
  }
}

/**
 * The BullMQ job telemetry metadata of a trace context: JSON of the W3C propagator's
 * carrier, as `bullmq-otel` writes `job.opts.telemetry.metadata`.
 */
export function bullmqTelemetryMetadata(carrier: TraceCarrier): string {
  return JSON.stringify(carrier.tracestate ? carrier : { traceparent: carrier.traceparent });
}

/** The trace context of a BullMQ job's telemetry metadata (undefined when it holds none). */
export function traceOfBullmqMetadata(metadata: unknown): TraceCarrier | undefined {
  if (typeof metadata !== "string" || metadata === "") return undefined;
  try {
    const parsed = JSON.parse(metadata) as Record<string, unknown>;
    return traceCarrierOf(parsed.traceparent, parsed.tracestate);
  } catch {
    return undefined;
  }
}
