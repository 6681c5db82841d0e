import type { IngestResult } from "@rendezvous/engine";
import { RendezvousError } from "@rendezvous/protocol";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { batchResult, encodeBatchAnswer, encodeSingleAnswer } from "../src/producers/answer.js";
import { makeApp } from "./helpers.js";

/** What the batch route answered before it had its own encoder. */
const reference = (outcomes: IngestResult[]) => Buffer.from(JSON.stringify({ results: outcomes.map(batchResult) }));

describe("encodeBatchAnswer", () => {
  it("writes the same bytes as JSON.stringify for the outcomes the Store makes: accepted, duplicate (matched and not), in batches of every size", async () => {
    const h = await makeApp();
    const events = (n: number, from = 0) =>
      Array.from({ length: n }, (_, i) => ({
        id: `e-${from + i}-ü"\\🙂`,
        type: "job.done",
        correlationId: `c-${(from + i) % 7}\u2028`,
        payload: { n: from + i },
        ...(i % 3 === 0 ? { occurredAt: "2026-11-30T08:00:00.000Z" } : {}),
      }));
    for (const n of [0, 1, 2, 17, 500]) {
      const fresh = await h.store.ingest("acme", "billing", events(n, 1000 * n));
      expect(fresh.every((o) => o.status === "accepted")).toBe(true);
      expect(encodeBatchAnswer(fresh).equals(reference(fresh))).toBe(true);
    }
    // duplicates carry the stored record (its status is no longer only `pending`)
    await h.store.register("acme", { runId: "r", position: "p", eventType: "job.done", correlationId: "c-1\u2028" });
    const again = await h.store.ingest("acme", "billing", events(17, 1000 * 17));
    expect(again.every((o) => o.status === "duplicate")).toBe(true);
    expect(encodeBatchAnswer(again).equals(reference(again))).toBe(true);
  });

  it("writes the same bytes as JSON.stringify for any mix of outcomes (generated), across tenants, producers and stream ids, and for answers larger than its buffer", () => {
    const text = fc.string({ unit: "grapheme", maxLength: 12 });
    const record = fc.record({
      id: text,
      tenant: fc.constantFrom("acme", 'glo"bex'),
      producer: fc.constantFrom("billing", "ship"),
      type: text,
      correlationId: text,
      occurredAt: fc.option(fc.constant("2026-11-30T08:00:00.000Z"), { nil: null }),
      acceptedAt: fc.constantFrom("2026-11-30T08:00:00.001Z", "2026-11-30T08:00:00.002Z"),
      streamId: fc.constantFrom("1796027519269-0", "1796027519270-3"),
      status: fc.constantFrom("pending" as const, "matched" as const),
      matchedWaits: fc.array(fc.constant("w1.abc"), { maxLength: 1 }),
      lateFor: fc.array(fc.constant("w2.def"), { maxLength: 1 }),
    });
    const outcome: fc.Arbitrary<IngestResult> = fc.oneof(
      record.map((event) => ({ status: "accepted" as const, event })),
      record.map((event) => ({ status: "duplicate" as const, event })),
      fc.constant({ status: "rejected" as const, error: new RendezvousError("event_id_conflict") }),
    );
    fc.assert(
      fc.property(fc.array(outcome, { maxLength: 40 }), (outcomes) => {
        expect(encodeBatchAnswer(outcomes).toString()).toBe(reference(outcomes).toString());
      }),
      { numRuns: 500, seed: 11 },
    );
    // far beyond the initial 64 KB buffer: 3,000 results of about 600 bytes
    const big: IngestResult[] = Array.from({ length: 3000 }, (_, i) => ({
      status: "accepted",
      event: {
        id: `${"🙂".repeat(100)}-${i}`,
        tenant: "acme",
        producer: "billing",
        type: "job.done",
        correlationId: `c-${i}`,
        occurredAt: null,
        acceptedAt: "2026-11-30T08:00:00.001Z",
        streamId: "1796027519269-0",
        status: "pending",
        matchedWaits: [],
        lateFor: [],
      },
    }));
    expect(encodeBatchAnswer(big).equals(reference(big))).toBe(true);
  });
});

describe("encodeSingleAnswer", () => {
  const reference = (o: Exclude<IngestResult, { status: "rejected" }>) =>
    JSON.stringify({ status: o.status, event: o.event });

  it("writes the same text as JSON.stringify({status, event}) for the outcomes the Store makes and any record (generated)", async () => {
    const h = await makeApp();
    const sent = [
      { id: `s-ü"\\🙂`, type: "job.done", correlationId: "c\u2028", payload: { n: 1 } },
      { id: "s-2", type: "job.done", correlationId: "c", occurredAt: "2026-11-30T08:00:00.000Z" },
    ];
    const outcomes = [
      ...(await h.store.ingest("acme", "billing", sent)),
      ...(await h.store.ingest("acme", "billing", sent)),
    ];
    expect(outcomes.map((o) => o.status)).toEqual(["accepted", "accepted", "duplicate", "duplicate"]);
    for (const o of outcomes) if (o.status !== "rejected") expect(encodeSingleAnswer(o)).toBe(reference(o));
    const text = fc.string({ unit: "grapheme", maxLength: 12 });
    const record = fc.record({
      id: text,
      tenant: text,
      producer: text,
      type: text,
      correlationId: text,
      occurredAt: fc.option(fc.constant("2026-11-30T08:00:00.000Z"), { nil: null }),
      acceptedAt: fc.constant("2026-11-30T08:00:00.001Z"),
      streamId: fc.constant("1796027519269-0"),
      status: fc.constantFrom("pending" as const, "matched" as const),
      matchedWaits: fc.array(fc.constant("w1.abc"), { maxLength: 1 }),
      lateFor: fc.array(fc.constant("w2.def"), { maxLength: 1 }),
    });
    fc.assert(
      fc.property(record, fc.constantFrom("accepted" as const, "duplicate" as const), (event, status) => {
        expect(encodeSingleAnswer({ status, event })).toBe(reference({ status, event }));
      }),
      { numRuns: 500, seed: 12 },
    );
  });
});
