/**
 * The batch answer's bytes. `JSON.stringify` of a whole 500-event answer makes one
 * string of about 130 KB, which V8 keeps in its large-object space (over 128 KB), and
 * encoding it makes another copy: together about 3 µs per event of the API's CPU in
 * `bench:ingest`, most of it garbage collection of the old generation that those
 * large objects fill. Here each result is one small string written into a reused
 * buffer, and the answer is one copy out of it. A single send's answer is written
 * from its fields the same way (no generic serializer walking the record).
 */

import type { IngestResult } from "@rendezvous/engine";
import type { EventRecord } from "@rendezvous/protocol";

/** One result of a batch answer, as docs/api.md shows it. */
export function batchResult(outcome: IngestResult) {
  if (outcome.status !== "rejected") return outcome;
  return { status: "rejected", error: outcome.error.toJSON().error };
}

const j = JSON.stringify;

/** Reused between answers (each is copied out before the next is written). */
let scratch = Buffer.allocUnsafe(64 * 1024);

/** Room for `chars` more UTF-16 code units (at most 3 UTF-8 bytes each) after `at`. */
function ensure(at: number, chars: number): void {
  const needed = at + chars * 3;
  if (needed <= scratch.length) return;
  const grown = Buffer.allocUnsafe(Math.max(needed, scratch.length * 2));
  scratch.copy(grown, 0, 0, at);
  scratch = grown;
}

/**
 * `Buffer.from(JSON.stringify({ results: outcomes.map(batchResult) }))`, byte for byte
 * (a test holds it to that), without the large intermediate string. A fresh accepted
 * event (no matched or late waits yet: every accepted one) is written from its fields;
 * anything else goes through `JSON.stringify`.
 */
export function encodeBatchAnswer(outcomes: readonly IngestResult[]): Buffer {
  let at = scratch.write('{"results":[', 0, "latin1");
  // tenant, producer, acceptedAt and streamId repeat from one event to the next
  let tenant: string | undefined;
  let producer: string | undefined;
  let acceptedAt: string | undefined;
  let streamId: string | undefined;
  let shared = "";
  let tail = "";
  for (let i = 0; i < outcomes.length; i++) {
    const o = outcomes[i] as IngestResult;
    let text: string;
    if (o.status === "accepted" && isFresh(o.event)) {
      const e = o.event;
      if (e.tenant !== tenant || e.producer !== producer) {
        tenant = e.tenant;
        producer = e.producer;
        shared = `,"tenant":${j(tenant)},"producer":${j(producer)},"type":`;
      }
      if (e.acceptedAt !== acceptedAt || e.streamId !== streamId) {
        acceptedAt = e.acceptedAt;
        streamId = e.streamId;
        tail = `,"acceptedAt":${j(acceptedAt)},"streamId":${j(streamId)},"status":"pending","matchedWaits":[],"lateFor":[]}}`;
      }
      text =
        `{"status":"accepted","event":{"id":${j(e.id)}${shared}${j(e.type)},"correlationId":${j(e.correlationId)},` +
        `"occurredAt":${e.occurredAt === null ? "null" : j(e.occurredAt)}${tail}`;
    } else {
      text = j(batchResult(o));
    }
    ensure(at, text.length + 3);
    if (i > 0) scratch[at++] = 0x2c; // ,
    at += scratch.write(text, at);
  }
  ensure(at, 2);
  at += scratch.write("]}", at, "latin1");
  const out = Buffer.allocUnsafeSlow(at);
  scratch.copy(out, 0, 0, at);
  return out;
}

/**
 * `JSON.stringify({ status, event })` of an accepted or duplicate outcome (the answer of
 * `POST /v1/events`), byte for byte (a test holds it to that); a fresh accepted event is
 * written from its fields, anything else goes through `JSON.stringify`.
 */
export function encodeSingleAnswer(outcome: Exclude<IngestResult, { status: "rejected" }>): string {
  const e = outcome.event;
  if (outcome.status !== "accepted" || !isFresh(e)) return j({ status: outcome.status, event: e });
  return (
    `{"status":"accepted","event":{"id":${j(e.id)},"tenant":${j(e.tenant)},"producer":${j(e.producer)},` +
    `"type":${j(e.type)},"correlationId":${j(e.correlationId)},` +
    `"occurredAt":${e.occurredAt === null ? "null" : j(e.occurredAt)},"acceptedAt":${j(e.acceptedAt)},` +
    `"streamId":${j(e.streamId)},"status":"pending","matchedWaits":[],"lateFor":[]}}`
  );
}

/**
 * An event record as `Store.ingest` makes one for an event it has just appended (its
 * keys in the order written above: the test against real Store outcomes holds that).
 */
function isFresh(e: EventRecord): boolean {
  return e.status === "pending" && e.matchedWaits.length === 0 && e.lateFor.length === 0;
}
