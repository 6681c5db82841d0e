/**
 * The ingest system: validated events of an authenticated producer go to the
 * Store in one pipelined call; refusals are counted and remembered (capped, no
 * payload) so `explain` can say `rejected_signal`. Nothing is stored for a
 * refused event.
 */

import {
  canonicalJson,
  type IngestInput,
  type IngestResult,
  type Logger,
  type Metrics,
  type Store,
  type TraceCarrier,
} from "@rendezvous/engine";
import { RendezvousError, toWellFormed } from "@rendezvous/protocol";
import type { ProducerIdentity } from "../auth.js";
import { jsonBytesOver } from "../json-bounds.js";
import { type EventValidator, invalidEvent, type Refused, readableId, readableMatchKey } from "./validation.js";

/** Most events in one batch request. */
export const MAX_BATCH = 500;

export interface ProducerIngestDeps {
  store: Store;
  validator: EventValidator;
  metrics: Metrics;
  logger: Logger;
  /** largest serialized event of a batch, in bytes */
  maxPayloadBytes: number;
  /** @defaultValue MAX_GATHER_MS */
  maxGatherMs?: number;
}

type Slot = { kind: "valid"; event: IngestInput } | ({ kind: "refused" } & Refused);

/**
 * Most milliseconds single sends wait for their producer's Store call in flight before
 * they go in a call of their own (a slow or frozen Redis then delays none by more).
 */
export const MAX_GATHER_MS = 2;

/** One producer's single sends: those gathered for its next Store call, and its calls in flight. */
interface Lane {
  producer: ProducerIdentity;
  slots: Slot[];
  waiters: Array<{ resolve: (o: IngestResult) => void; reject: (e: unknown) => void }>;
  /** Store calls of single sends in flight */
  inFlight: number;
  /** the MAX_GATHER_MS timer of sends gathered behind a call in flight */
  timer: NodeJS.Timeout | null;
}

export class ProducerIngest {
  readonly #d: ProducerIngestDeps;
  /** one lane per producer that sent single events (identities are made once per producer) */
  readonly #lanes = new Map<ProducerIdentity, Lane>();
  /** lanes whose gathered sends go to the Store at the next flush */
  readonly #ready = new Set<Lane>();
  #flushing = false;
  readonly #flush = (): void => this.#flushReady();

  constructor(deps: ProducerIngestDeps) {
    this.#d = deps;
  }

  /**
   * Validates, dedups and appends one event. Single sends go to the Store together,
   * one call per producer, as a batch would: two pipelined round trips for all of them
   * instead of two each. They are gathered over one turn of the event loop (many
   * producers' connections read at once) when the producer has no call in flight, else
   * until that call answers (at most MAX_GATHER_MS): under load the calls grow with the
   * load instead of their number. Each request still gets its own answer; two sends of
   * one event id among them are ordered as in a batch (the first is accepted, the
   * second a duplicate or a conflict).
   */
  single(producer: ProducerIdentity, raw: unknown, trace?: TraceCarrier): Promise<IngestResult> {
    const slot = this.#check(producer, raw, trace);
    return new Promise<IngestResult>((resolve, reject) => {
      const lane = this.#lane(producer);
      lane.slots.push(slot);
      lane.waiters.push({ resolve, reject });
      if (lane.inFlight === 0) this.#schedule(lane);
      else lane.timer ??= setTimeout(this.#timedOut, this.#d.maxGatherMs ?? MAX_GATHER_MS, lane);
    });
  }

  #lane(producer: ProducerIdentity): Lane {
    let lane = this.#lanes.get(producer);
    if (!lane) {
      lane = { producer, slots: [], waiters: [], inFlight: 0, timer: null };
      this.#lanes.set(producer, lane);
    }
    return lane;
  }

  readonly #timedOut = (lane: Lane): void => {
    lane.timer = null;
    this.#schedule(lane);
  };

  /** Flushes `lane` after this turn's I/O callbacks: every request read in it has been gathered. */
  #schedule(lane: Lane): void {
    this.#ready.add(lane);
    if (this.#flushing) return;
    this.#flushing = true;
    setImmediate(this.#flush);
  }

  #flushReady(): void {
    this.#flushing = false;
    for (const lane of this.#ready) this.#send(lane);
    this.#ready.clear();
  }

  #send(lane: Lane): void {
    if (lane.timer) {
      clearTimeout(lane.timer);
      lane.timer = null;
    }
    const { slots, waiters } = lane;
    if (slots.length === 0) return;
    lane.slots = [];
    lane.waiters = [];
    for (let i = 0; i < slots.length; i += MAX_BATCH) {
      const part = waiters.length <= MAX_BATCH ? waiters : waiters.slice(i, i + MAX_BATCH);
      lane.inFlight++;
      this.run(lane.producer, slots.length <= MAX_BATCH ? slots : slots.slice(i, i + MAX_BATCH)).then(
        (outcomes) => {
          this.#answered(lane);
          for (let j = 0; j < part.length; j++) part[j]?.resolve(outcomes[j] as IngestResult);
        },
        (err: unknown) => {
          this.#answered(lane);
          for (const w of part) w.reject(err);
        },
      );
    }
  }

  /** A call of `lane` answered: what gathered behind it goes next. */
  #answered(lane: Lane): void {
    lane.inFlight--;
    if (lane.slots.length > 0) this.#schedule(lane);
  }

  /**
   * A batch body `{"events": [...]}`: each event is checked on its own (and against
   * `maxPayloadBytes` by its serialized size); the valid ones go to the Store in one call.
   * @throws RendezvousError `invalid_event` when the body itself is not such an object
   */
  async batch(producer: ProducerIdentity, body: unknown, trace?: TraceCarrier): Promise<IngestResult[]> {
    const max = this.#d.maxPayloadBytes;
    const slots = batchEvents(body).map((raw): Slot => {
      const checked = this.#check(producer, raw, trace);
      if (checked.kind === "refused") {
        // too large wins over invalid, as it would for the body of a single send; measured
        // without JSON.stringify, which would recurse through however deep the event nests
        return jsonBytesOver(raw, max) ? tooLarge(raw, max) : checked;
      }
      // A valid event is measured from its parts: the canonical payload (which the
      // Store needs anyway) is as long as its JSON.stringify, so the payload is
      // serialized once, not twice.
      const event = checked.event;
      if (event.payload !== undefined) event.canonicalPayload = canonicalJson(event.payload);
      return serializedBytes(raw as Record<string, unknown>, event.canonicalPayload) > max
        ? tooLarge(raw, max)
        : checked;
    });
    return this.run(producer, slots);
  }

  /** `trace`: the context the event is accepted with (kept in its stream entry, not its content) */
  #check(producer: ProducerIdentity, raw: unknown, trace: TraceCarrier | undefined): Slot {
    const checked = this.#d.validator.check(raw, producer);
    if (!checked.ok) return { ...checked, kind: "refused" };
    const event: IngestInput = checked.event;
    if (trace) event.trace = trace;
    return { kind: "valid", event };
  }

  private async run(producer: ProducerIdentity, slots: Slot[]): Promise<IngestResult[]> {
    const { store, metrics } = this.#d;
    const { tenant } = producer;
    const valid = slots.flatMap((s, i) => (s.kind === "valid" ? [{ i, event: s.event }] : []));
    const stored =
      valid.length > 0
        ? await store.ingest(
            tenant,
            producer.producer,
            valid.map((v) => v.event),
          )
        : [];

    const outcomes: IngestResult[] = new Array(slots.length);
    const refusals: Refused[] = [];
    slots.forEach((s, i) => {
      if (s.kind === "refused") {
        outcomes[i] = { status: "rejected", error: s.error };
        refusals.push(s);
      }
    });
    let accepted = 0;
    let duplicate = 0;
    valid.forEach(({ i, event }, j) => {
      const r = stored[j];
      if (!r) throw new Error("store.ingest answered fewer results than events");
      outcomes[i] = r;
      if (r.status === "accepted") accepted++;
      else if (r.status === "duplicate") duplicate++;
      else {
        refusals.push({
          error: r.error,
          matchKey: { eventType: event.type, correlationId: event.correlationId },
          eventId: event.id,
        });
      }
    });
    if (accepted > 0) metrics.eventsAccepted.inc({ tenant }, accepted);
    if (duplicate > 0) metrics.eventsDuplicate.inc({ tenant }, duplicate);
    await this.#remember(producer, refusals);
    return outcomes;
  }

  /** Counts refusals and records the placeable ones (best effort: a failure is logged). */
  async #remember(producer: ProducerIdentity, refusals: Refused[]): Promise<void> {
    if (refusals.length === 0) return;
    for (const r of refusals) this.#d.metrics.eventsRejected.inc({ reason: r.error.code, tenant: producer.tenant });
    const records = refusals.flatMap((r) =>
      r.matchKey
        ? [
            {
              producer: producer.producer,
              eventType: r.matchKey.eventType,
              correlationId: r.matchKey.correlationId,
              eventId: r.eventId,
              reason: r.error.code,
              detail: refusalDetail(r.error),
            },
          ]
        : [],
    );
    this.#d.logger.info(
      { tenant: producer.tenant, producer: producer.producer, refused: refusals.map((r) => r.error.code) },
      "events refused",
    );
    if (records.length === 0) return;
    try {
      await this.#d.store.recordRejections(producer.tenant, records);
    } catch (err) {
      this.#d.logger.warn({ err, tenant: producer.tenant }, "could not record refused events");
    }
  }
}

/** A short well-formed text for the rejection record: the message and the first issues (no payload values). */
function refusalDetail(error: RendezvousError): string {
  const issues = error.details.issues as Array<{ path: unknown[]; message: string }> | undefined;
  if (!issues?.length) return toWellFormed(error.message);
  const first = issues
    .slice(0, 3)
    .map((i) => `${i.path.join(".") || "(event)"}: ${i.message}`)
    .join("; ");
  // a bad key is quoted as sent: cut and lone surrogates become U+FFFD, so the record can be stored
  return toWellFormed(`${error.message}: ${first}`.slice(0, 300));
}

/**
 * `Buffer.byteLength(JSON.stringify(raw))` of a valid event (an object of the envelope's
 * keys), its payload measured by its canonical JSON, which has the same length.
 */
export function serializedBytes(raw: Record<string, unknown>, canonicalPayload: string | undefined): number {
  const keys = Object.keys(raw);
  if (keys.length === 0) return 2;
  let bytes = 1; // "{"
  for (const key of keys) {
    // the envelope's keys are ASCII: quotes, colon, and a comma or the closing brace
    bytes += key.length + 4;
    bytes +=
      key === "payload" && canonicalPayload !== undefined
        ? Buffer.byteLength(canonicalPayload)
        : Buffer.byteLength(JSON.stringify(raw[key]));
  }
  return bytes;
}

function tooLarge(raw: unknown, max: number): Slot {
  return {
    kind: "refused",
    error: new RendezvousError("payload_too_large", `event exceeds maxPayloadBytes (${max} bytes)`, {
      maxPayloadBytes: max,
    }),
    matchKey: readableMatchKey(raw),
    eventId: readableId(raw),
  };
}

/** The events array of a batch body. */
function batchEvents(body: unknown): unknown[] {
  if (typeof body !== "object" || body === null || Array.isArray(body)) {
    throw invalidEvent('a batch body is {"events": [...]}', [{ path: [], message: "expected an object" }]);
  }
  const extra = Object.keys(body).filter((k) => k !== "events");
  if (extra.length > 0) {
    throw invalidEvent('a batch body is {"events": [...]}', [
      { path: [], message: `unrecognized key(s): ${extra.slice(0, 5).join(", ")}` },
    ]);
  }
  const events = (body as { events?: unknown }).events;
  if (!Array.isArray(events)) {
    throw invalidEvent('a batch body is {"events": [...]}', [{ path: ["events"], message: "expected an array" }]);
  }
  if (events.length > MAX_BATCH) {
    throw invalidEvent(`a batch holds at most ${MAX_BATCH} events`, [
      { path: ["events"], message: `${events.length} events; at most ${MAX_BATCH}` },
    ]);
  }
  return events;
}
