import {
  canonicalJson,
  createLogger,
  createMetrics,
  type IngestInput,
  type IngestResult,
  parseConfig,
  type Store,
} from "@rendezvous/engine";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { indexCredentials, type ProducerIdentity } from "../src/auth.js";
import { ProducerIngest, serializedBytes } from "../src/producers/ingest.js";
import { EventValidator } from "../src/producers/validation.js";
import { CONFIG, ev, MAX_BYTES, makeApp, publish, publishBatch, send, snapshot, streamLength } from "./helpers.js";

/** Counts the Store's ingest calls (the real Store runs underneath). */
function countIngestCalls(store: Store): { calls: number[] } {
  const seen = { calls: [] as number[] };
  const original = store.ingest.bind(store);
  store.ingest = (tenant, producer, events) => {
    seen.calls.push(events.length);
    return original(tenant, producer, events);
  };
  return seen;
}

describe("POST /v1/events/batch", () => {
  it("answers one result per event, in order; one bad event spoils nothing; valid ones go to the store in one call", async () => {
    const h = await makeApp();
    const seen = countIngestCalls(h.store);
    expect((await publish(h, ev("dup"))).statusCode).toBe(202);
    expect((await publish(h, ev("conflict"))).statusCode).toBe(202);
    const events = [
      ev("b1"),
      ev("bad-type", { type: "Nope" }),
      ev("dup"),
      ev("conflict", { payload: { other: true } }),
      ev("forbidden", { type: "order.refunded" }),
      { id: "schema", type: "order.paid", correlationId: "o", payload: { amount: "x" } },
      "not an object",
      ev("b2"),
      ev("b1"), // again in the same batch: a duplicate of the first
      ev("big", { payload: { s: "x".repeat(h.config.maxPayloadBytes) } }),
    ];
    const res = await publishBatch(h, events, { secret: "whsec_old" });
    expect(res.statusCode).toBe(200);
    const { results } = res.json();
    expect(results.map((r: { status: string; error?: { code: string } }) => r.error?.code ?? r.status)).toEqual([
      "accepted",
      "invalid_event",
      "duplicate",
      "event_id_conflict",
      "forbidden_event_type",
      "invalid_event",
      "invalid_event",
      "accepted",
      "duplicate",
      "payload_too_large",
    ]);
    expect(results[0].event).toMatchObject({ id: "b1", tenant: "acme", producer: "billing", status: "pending" });
    expect(results[8].event.streamId).toBe(results[0].event.streamId);
    expect(results[1].error).toMatchObject({ message: expect.any(String), issues: [{ path: ["type"] }] });
    expect(results[5].error.issues).toEqual([{ path: ["payload", "amount"], message: "must be number" }]);
    for (const r of results) {
      if (r.status === "rejected") expect(Object.keys(r)).toEqual(["status", "error"]);
    }
    // the two single sends, then ONE call with the valid events of the batch
    expect(seen.calls).toEqual([1, 1, 5]);
    expect(await streamLength(h)).toBe(4);
  });

  it("up to 500 events; 501 is 400 invalid_event and stores nothing", async () => {
    const h = await makeApp({ maxPayloadBytes: 1024 });
    const max = Array.from({ length: 500 }, (_, i) => ev(`m${i}`));
    const ok = await publishBatch(h, max);
    expect(ok.statusCode).toBe(200);
    expect(ok.json().results).toHaveLength(500);
    expect(ok.json().results.every((r: { status: string }) => r.status === "accepted")).toBe(true);
    const before = await snapshot(h);
    const over = await publishBatch(
      h,
      Array.from({ length: 501 }, (_, i) => ev(`n${i}`)),
    );
    expect(over.statusCode).toBe(400);
    expect(over.json().error).toMatchObject({ code: "invalid_event", issues: [{ path: ["events"] }] });
    expect(await snapshot(h)).toEqual(before);
  });

  it("an empty batch is 200 with no results", async () => {
    const h = await makeApp();
    const res = await publishBatch(h, []);
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ results: [] });
  });

  it("a body that is not {events: [...]} is 400 invalid_event", async () => {
    const h = await makeApp();
    for (const body of [
      "nope",
      "[]",
      "{}",
      '{"events": {}}',
      '{"events": "x"}',
      '{"events": [], "tenant": "globex"}',
    ]) {
      const res = await send(h, "/v1/events/batch", body);
      expect(res.statusCode, body).toBe(400);
      expect(res.json().error.code, body).toBe("invalid_event");
    }
    expect(await snapshot(h)).toEqual({});
  });

  it("the body may be 500 × maxPayloadBytes; beyond that 413", async () => {
    const h = await makeApp({ maxPayloadBytes: 256 });
    const limit = 256 * 500;
    const event = ev("x", { payload: { s: "y".repeat(100) } });
    const fits = Array.from({ length: 500 }, (_, i) => ({ ...event, id: `f${String(i).padStart(3, "0")}` }));
    const body = JSON.stringify({ events: fits });
    expect(Buffer.byteLength(body)).toBeLessThanOrEqual(limit);
    expect((await send(h, "/v1/events/batch", body)).statusCode).toBe(200);
    const padded = `${body}${" ".repeat(limit - Buffer.byteLength(body) + 1)}`;
    const res = await send(h, "/v1/events/batch", padded);
    expect(res.statusCode).toBe(413);
    expect(res.json().error.code).toBe("payload_too_large");
  });

  it("each event of a batch is bounded by maxPayloadBytes (its serialized size)", async () => {
    const h = await makeApp({ maxPayloadBytes: 200 });
    const small = ev("s1");
    const big = ev("b1", { payload: { s: "z".repeat(200) } });
    const res = await publishBatch(h, [small, big]);
    expect(res.json().results.map((r: { status: string }) => r.status)).toEqual(["accepted", "rejected"]);
    expect(res.json().results[1].error).toMatchObject({ code: "payload_too_large", maxPayloadBytes: 200 });
    expect(await streamLength(h)).toBe(1);
  });

  it("a batch where every event is refused stores nothing but the refusal records", async () => {
    const h = await makeApp();
    const res = await publishBatch(h, [ev("f1", { type: "order.refunded" }), ev("f2", { correlationId: "" })]);
    expect(res.statusCode).toBe(200);
    expect(await snapshot(h)).toEqual({});
    expect(await h.store.rejections("acme", "order.refunded", "job-f1")).toMatchObject([
      { producer: "billing", eventId: "f1", reason: "forbidden_event_type" },
    ]);
  });
});

describe("single sends that arrive together", () => {
  it("go to the store together, each with its own answer; one event id sent twice among them is ordered as in a batch", async () => {
    const h = await makeApp();
    const seen = countIngestCalls(h.store);
    const sends = [
      ...Array.from({ length: 20 }, (_, i) => publish(h, ev(`together-${i}`))),
      publish(h, ev("twice")),
      publish(h, ev("twice")),
      publish(h, ev("clash")),
      publish(h, ev("clash", { payload: { other: true } })),
      publish(h, ev("bad", { type: "Nope" })),
    ];
    const answers = await Promise.all(sends);
    expect(answers.slice(0, 20).map((r) => r.statusCode)).toEqual(Array(20).fill(202));
    answers.slice(0, 20).forEach((r, i) => {
      expect(r.json().event.id).toBe(`together-${i}`);
    });
    expect(answers.slice(20).map((r) => r.statusCode)).toEqual([202, 200, 202, 409, 400]);
    expect(answers[21]?.json().event.streamId).toBe(answers[20]?.json().event.streamId);
    expect(answers[23]?.json().error.code).toBe("event_id_conflict");
    // far fewer store calls than sends (one per turn of the event loop that gathered them)
    expect(seen.calls.reduce((a, b) => a + b, 0)).toBe(24);
    expect(seen.calls.length).toBeLessThan(5);
    expect(await streamLength(h)).toBeGreaterThanOrEqual(1);
    const stored = await h.store.ingest("acme", "billing", [ev("together-3") as never]);
    expect(stored[0]?.status).toBe("duplicate");
  });
});

describe("single sends behind a call in flight", () => {
  const producer = indexCredentials(parseConfig(CONFIG)).producers.get("acme/billing")?.identity as ProducerIdentity;

  /** A ProducerIngest over a store whose first call answers only when released. */
  function gated(maxGatherMs: number) {
    const calls: string[][] = [];
    let release: () => void = () => undefined;
    const gate = new Promise<void>((r) => {
      release = r;
    });
    const store = {
      ingest: async (_tenant: string, _producer: string, events: IngestInput[]) => {
        calls.push(events.map((e) => e.id));
        if (calls.length === 1) await gate;
        return events.map((e) => ({ status: "accepted", event: { id: e.id } }));
      },
    } as unknown as Store;
    const ingest = new ProducerIngest({
      store,
      validator: new EventValidator(parseConfig(CONFIG)),
      metrics: createMetrics(),
      logger: createLogger({ level: "silent" }),
      maxPayloadBytes: MAX_BYTES,
      maxGatherMs,
    });
    return { calls, release, ingest };
  }
  const turn = () => new Promise((r) => setImmediate(r));

  it("gather until it answers and go in one call, each with its own answer", async () => {
    const { calls, release, ingest } = gated(60_000);
    const first = ingest.single(producer, ev("ahead"));
    await turn();
    const behind: Array<Promise<IngestResult>> = [];
    for (let i = 0; i < 10; i++) {
      behind.push(ingest.single(producer, ev(`behind-${i}`)));
      await turn(); // each in a turn of its own
    }
    expect(calls).toEqual([["ahead"]]);
    release();
    expect((await first).status).toBe("accepted");
    const answers = await Promise.all(behind);
    answers.forEach((r, i) => {
      expect(r.status === "accepted" && r.event.id).toBe(`behind-${i}`);
    });
    expect(calls.map((c) => c.length)).toEqual([1, 10]);
  });

  it("go on their own after maxGatherMs when the call in flight does not answer", async () => {
    const { calls, release, ingest } = gated(5);
    const first = ingest.single(producer, ev("stuck"));
    await turn();
    const behind = await ingest.single(producer, ev("not-stuck"));
    expect(behind.status).toBe("accepted");
    expect(calls).toEqual([["stuck"], ["not-stuck"]]);
    release();
    expect((await first).status).toBe("accepted");
  });
});

describe("the size of a batched event", () => {
  it("measured from its parts is its serialized size (Buffer.byteLength(JSON.stringify(event)))", () => {
    const text = fc.string({ unit: "grapheme", maxLength: 40 });
    fc.assert(
      fc.property(
        fc.record(
          {
            id: text,
            type: fc.constantFrom("job.done", "order.paid"),
            correlationId: text,
            occurredAt: fc.constantFrom("2026-11-30T04:00:00Z", "2026-11-30T05:00:00.123+01:00"),
            payload: fc.dictionary(text, fc.jsonValue({ maxDepth: 3 }), { maxKeys: 6 }),
          },
          { requiredKeys: ["id"] },
        ),
        (raw) => {
          const payload = raw.payload === undefined ? undefined : canonicalJson(raw.payload);
          expect(serializedBytes(raw, payload)).toBe(Buffer.byteLength(JSON.stringify(raw)));
        },
      ),
      { numRuns: 2000, seed: 20261130 },
    );
  });
});
