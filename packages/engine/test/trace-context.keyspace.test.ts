/**
 * Trace contexts as stored (docs/api.md, Tracing): what is written to Redis with and
 * without one. Without a context nothing is added (no stream entry field, the compact
 * wait record, no outbox field); with one, it is kept in the event's stream entry, the
 * wait's record and the resolution's outbox entry, never in the event's content.
 */
import { describe, expect, it } from "vitest";
import {
  eventsOfEntry,
  resolutionOfEntry,
  type StreamEntry,
  traceCarrierOf,
  traceOfText,
  traceText,
} from "../src/index.js";
import { event, ingestOne, makeStore } from "./helpers.js";

const TP_A = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
const TP_B = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
const TP_C = "00-11111111111111111111111111111111-2222222222222222-00";

async function entries(h: ReturnType<typeof makeStore>, key: string): Promise<StreamEntry[]> {
  const raw = (await h.redis.xrange(key, "-", "+")) as Array<[string, string[]]>;
  return raw.map(([id, flat]) => {
    const fields: Record<string, string> = {};
    for (let i = 0; i + 1 < flat.length; i += 2) fields[flat[i] as string] = flat[i + 1] as string;
    return { id, fields };
  });
}

describe("traceCarrierOf: the headers honoured", () => {
  it("takes a well-formed traceparent (lowercased) and a tracestate within bounds", () => {
    expect(traceCarrierOf(TP_A)).toEqual({ traceparent: TP_A });
    expect(traceCarrierOf(TP_A.toUpperCase(), "rdv=1,other=x")).toEqual({
      traceparent: TP_A,
      tracestate: "rdv=1,other=x",
    });
    // a later version is read as version 00 (its extra fields dropped)
    expect(traceCarrierOf(`01${TP_A.slice(2)}-extra`)).toEqual({ traceparent: TP_A });
  });

  it("ignores what is malformed, never throws", () => {
    for (const bad of [
      undefined,
      "",
      "garbage",
      `ff${TP_A.slice(2)}`,
      `${TP_A}-extra`, // version 00 ends after its flags
      "00-00000000000000000000000000000000-b7ad6b7169203331-01",
      "00-0af7651916cd43dd8448eb211c80319c-0000000000000000-01",
      "00-0af7651916cd43dd8448eb211c80319-b7ad6b7169203331-01",
      42,
    ]) {
      expect(traceCarrierOf(bad)).toBeUndefined();
    }
    expect(traceCarrierOf(TP_A, "x".repeat(513))).toEqual({ traceparent: TP_A });
    expect(traceCarrierOf(TP_A, "k=\u00e9")).toEqual({ traceparent: TP_A });
  });

  it("stored text: the traceparent, then the tracestate", () => {
    const c = { traceparent: TP_A, tracestate: "a=b" };
    expect(traceText(c)).toBe(`${TP_A}a=b`);
    expect(traceOfText(traceText(c))).toEqual(c);
    expect(traceText(undefined)).toBe("");
    expect(traceOfText("")).toBeUndefined();
  });
});

describe("trace contexts in Redis", () => {
  it("without a context: no stream field t, a compact wait record, no outbox field t", async () => {
    const h = makeStore({ partitions: 1 });
    const { wait } = await h.store.register("acme", {
      runId: "r",
      position: "p",
      eventType: "job.done",
      correlationId: "c",
    });
    const k = h.store.keys.partition(0);
    expect(await h.redis.hget(k.waits, wait.id)).not.toMatch(/^\{/);
    const ingested = await ingestOne(h, event("e1", "c"));
    const [entry] = await entries(h, k.stream);
    expect(Object.keys(entry?.fields ?? {})).toEqual(["ks"]);
    const [r] = await h.store.match(0, [{ streamId: ingested.streamId, eventKey: ingested.eventKey }]);
    expect(r?.matched).toEqual([wait.id]);
    expect(r?.registrations).toBeUndefined();
    const [out] = await entries(h, k.outbox);
    expect(Object.keys(out?.fields ?? {}).sort()).toEqual(["k", "r", "w"]);
  });

  it("with contexts: kept per event in the stream entry, with the wait and on the outbox; not part of the content", async () => {
    const h = makeStore({ partitions: 1 });
    const { wait } = await h.store.register(
      "acme",
      { runId: "r", position: "p", eventType: "job.done", correlationId: "c" },
      { traceparent: TP_A, tracestate: "reg=1" },
    );
    const k = h.store.keys.partition(0);
    expect(JSON.parse((await h.redis.hget(k.waits, wait.id)) as string).tc).toBe(`${TP_A}reg=1`);
    // the Wait of the API does not show it
    expect(JSON.stringify(await h.store.getWait("acme", wait.id))).not.toContain(TP_A.slice(3, 35));

    // one call, three events: with, without, with a tracestate
    const results = await h.store.ingest("acme", "svc", [
      { ...event("e1", "c"), trace: { traceparent: TP_B } },
      event("e2", "other"),
      { ...event("e3", "other2"), trace: { traceparent: TP_C, tracestate: "s=1" } },
    ]);
    expect(results.map((r) => r.status)).toEqual(["accepted", "accepted", "accepted"]);
    const [entry] = await entries(h, k.stream);
    const decoded = eventsOfEntry(entry as StreamEntry);
    expect(decoded.events.map((e) => e.trace)).toEqual([
      { traceparent: TP_B },
      undefined,
      { traceparent: TP_C, tracestate: "s=1" },
    ]);

    // a re-send under another trace is a duplicate, and appends nothing
    const [again] = await h.store.ingest("acme", "svc", [{ ...event("e1", "c"), trace: { traceparent: TP_C } }]);
    expect(again?.status).toBe("duplicate");
    expect(await h.redis.xlen(k.stream)).toBe(1);

    const first = decoded.events[0];
    const matchTrace = "00-99999999999999999999999999999999-8888888888888888-01";
    const [r] = await h.store.match(
      0,
      [{ streamId: first?.streamId as string, eventKey: first?.eventKey as string }],
      [matchTrace],
    );
    expect(r?.matched).toEqual([wait.id]);
    expect(r?.registrations).toEqual([`${TP_A}reg=1`]);
    const [out] = await entries(h, k.outbox);
    const resolution = resolutionOfEntry(out as StreamEntry);
    expect(resolution.trace).toEqual({ traceparent: matchTrace });
    expect(resolution.registration).toEqual({ traceparent: TP_A, tracestate: "reg=1" });
    expect(resolution.wait?.state).toBe("resolved");
  });
});
