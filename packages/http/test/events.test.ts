import { LONE_SURROGATE, NUMBER_OUT_OF_RANGE } from "@rendezvous/protocol";
import { describe, expect, it } from "vitest";
import { errorCode, ev, makeApp, publish, publishBatch, snapshot, streamLength } from "./helpers.js";

const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

describe("POST /v1/events", () => {
  it("202 accepted: the event is durably appended and carries its streamId and acceptedAt", async () => {
    const h = await makeApp();
    const res = await publish(h, ev("e1", { occurredAt: "2026-11-29T13:34:41.123+01:00" }));
    expect(res.statusCode).toBe(202);
    const body = res.json();
    expect(body).toMatchObject({
      status: "accepted",
      event: {
        id: "e1",
        tenant: "acme",
        producer: "billing",
        type: "job.done",
        correlationId: "job-e1",
        status: "pending",
        matchedWaits: [],
        lateFor: [],
      },
    });
    expect(body.event.acceptedAt).toMatch(ISO_MS);
    expect(body.event.occurredAt).toBe("2026-11-29T12:34:41.123Z"); // normalized to UTC with ms
    expect(body.event.streamId).toMatch(/^\d+-\d+$/);
    expect(Date.parse(body.event.acceptedAt)).toBe(Number(body.event.streamId.split("-")[0]));
    expect(await streamLength(h)).toBe(1);
    expect(await h.store.getEvent("acme", "billing", "e1")).toMatchObject({ streamId: body.event.streamId });
  });

  it("200 duplicate: the same id with the same content answers the original and appends nothing", async () => {
    const h = await makeApp();
    const first = (await publish(h, ev("e1", { payload: { a: 1, b: 2 } }))).json();
    // key order differs: still the same content; the signature credential is another way in
    const again = await publish(h, ev("e1", { payload: { b: 2, a: 1 } }), { secret: "whsec_new" });
    expect(again.statusCode).toBe(200);
    expect(again.json()).toEqual({ status: "duplicate", event: expect.objectContaining(first.event) });
    expect(again.json().event.streamId).toBe(first.event.streamId);
    expect(await streamLength(h)).toBe(1);
  });

  it("occurredAt is kept as UTC with milliseconds: the same instant with another offset is a duplicate", async () => {
    const h = await makeApp();
    const first = await publish(h, ev("t1", { occurredAt: "2026-11-29T13:34:41.5+01:00" }));
    expect(first.json().event.occurredAt).toBe("2026-11-29T12:34:41.500Z");
    const same = await publish(h, ev("t1", { occurredAt: "2026-11-29T12:34:41.500Z" }));
    expect(same.statusCode).toBe(200);
    expect(same.json().status).toBe("duplicate");
    const read = await h.app.inject({ url: "/v1/events/billing/t1", headers: { authorization: "Bearer hk_acme" } });
    expect(read.json().event.occurredAt).toBe("2026-11-29T12:34:41.500Z");
    for (const bad of ["2026-02-30T00:00:00Z", "2026-11-29T24:00:00Z", "2026-11-29T23:59:60Z", "2026-11-29"]) {
      const res = await publish(h, ev(`bad-${bad}`, { occurredAt: bad }));
      expect(res.statusCode, bad).toBe(400);
      expect(res.json().error.issues[0].path).toEqual(["occurredAt"]);
    }
  });

  it("409 event_id_conflict: the same id with other content, whatever the type or correlation id; nothing stored", async () => {
    const h = await makeApp();
    expect((await publish(h, ev("e1"))).statusCode).toBe(202);
    const before = await snapshot(h);
    for (const other of [
      ev("e1", { payload: { n: "changed" } }),
      ev("e1", { correlationId: "another" }),
      ev("e1", { type: "job.failed" }),
      ev("e1", { occurredAt: "2026-01-01T00:00:00.000Z" }),
      ev("e1", { payload: undefined }),
    ]) {
      const res = await publish(h, other);
      expect(res.statusCode, JSON.stringify(other)).toBe(409);
      expect(res.json().error).toMatchObject({ code: "event_id_conflict", message: expect.any(String) });
    }
    expect(await snapshot(h)).toEqual(before);
  });

  it("dedup is per (tenant, producer, id): other producers and tenants may reuse an id", async () => {
    const h = await makeApp();
    expect((await publish(h, ev("e1"))).statusCode).toBe(202);
    expect((await publish(h, ev("e1"), { producer: "acme/ship", key: "pk_ship" })).statusCode).toBe(202);
    expect((await publish(h, ev("e1"), { producer: "globex/billing", key: "pk_globex" })).statusCode).toBe(202);
    expect(await streamLength(h)).toBe(3);
  });

  it("envelope bounds: ids 1–200 chars, type pattern, correlationId 1–256 chars", async () => {
    const h = await makeApp();
    const accepted = [
      ev("x".repeat(200)),
      ev("a"),
      ev("t1", { type: "job.9_x-y" }),
      ev("t2", { type: `job.${"a".repeat(124)}` }), // 128 chars
      ev("c1", { correlationId: "c" }),
      ev("c2", { correlationId: "c".repeat(256) }),
      ev("p1", { payload: undefined }),
      ev("o1", { occurredAt: "2026-11-29T13:34:41Z" }),
    ];
    for (const e of accepted) expect((await publish(h, e)).statusCode, JSON.stringify(e).slice(0, 80)).toBe(202);
    const refused: Array<[Record<string, unknown>, string]> = [
      [ev("x".repeat(201)), "id"],
      [ev(""), "id"],
      [ev("i1", { id: 5 }), "id"],
      [ev("t3", { type: `job.${"a".repeat(125)}` }), "type"], // 129 chars
      [ev("t4", { type: "Job.done" }), "type"],
      [ev("t5", { type: ".job" }), "type"],
      [ev("t6", { type: "job done" }), "type"],
      [ev("c3", { correlationId: "" }), "correlationId"],
      [ev("c4", { correlationId: "c".repeat(257) }), "correlationId"],
      [ev("c5", { correlationId: 7 }), "correlationId"],
      [ev("o2", { occurredAt: "yesterday" }), "occurredAt"],
      [ev("o3", { occurredAt: 1_700_000_000 }), "occurredAt"],
      [ev("p2", { payload: [1, 2] }), "payload"],
      [ev("p3", { payload: "text" }), "payload"],
      [ev("p4", { payload: null }), "payload"],
      [{ type: "job.done", correlationId: "x" }, "id"],
      [{ id: "m1", correlationId: "x" }, "type"],
      [{ id: "m2", type: "job.done" }, "correlationId"],
    ];
    for (const [e, field] of refused) {
      const res = await publish(h, e);
      expect(res.statusCode, field).toBe(400);
      const error = res.json().error;
      expect(error.code).toBe("invalid_event");
      expect(error.issues.map((i: { path: unknown[] }) => i.path[0])).toContain(field);
      for (const issue of error.issues) expect(issue).toEqual({ path: expect.any(Array), message: expect.any(String) });
    }
    // a payload that is no object says what it is
    const notObject = await publish(h, ev("p5", { payload: [1] }));
    expect(notObject.json().error.issues).toEqual([
      { path: ["payload"], message: "Invalid input: expected object, received array" },
    ]);
    expect(await streamLength(h)).toBe(accepted.length);
  });

  it("400 invalid_event for a lone surrogate (valid JSON, not valid Unicode) in the id, correlation id, a payload value or key, and for a number beyond double range; nothing stored", async () => {
    const h = await makeApp();
    const before = await snapshot(h);
    const cases: Array<[string, Array<string | number>]> = [
      ['{"id":"e\\ud800","type":"job.done","correlationId":"c"}', ["id"]],
      ['{"id":"e1","type":"job.done","correlationId":"c\\udfff"}', ["correlationId"]],
      [
        '{"id":"e1","type":"job.done","correlationId":"c","payload":{"a":{"b":["x","\\ud83d"]}}}',
        ["payload", "a", "b", 1],
      ],
      ['{"id":"e1","type":"job.done","correlationId":"c","payload":{"k\\udc00":1}}', ["payload", "k\udc00"]],
    ];
    for (const [body, path] of cases) {
      const res = await publish(h, body);
      expect(res.statusCode, body).toBe(400);
      expect(res.json().error.code).toBe("invalid_event");
      expect(res.json().error.issues).toContainEqual({ path, message: LONE_SURROGATE });
    }
    // a number JSON reads as Infinity cannot be stored as sent either
    for (const n of ["1e400", "-1e400"]) {
      const res = await publish(h, `{"id":"e1","type":"job.done","correlationId":"c","payload":{"a":[${n}]}}`);
      expect(res.statusCode, n).toBe(400);
      expect(res.json().error.issues).toContainEqual({ path: ["payload", "a", 0], message: NUMBER_OUT_OF_RANGE });
    }
    expect(await snapshot(h)).toEqual(before);
    // in a batch only that event is refused
    const batch = await publishBatch(h, [ev("b1"), { ...ev("b2"), correlationId: "c\ud800" }, ev("b3")]);
    expect(batch.statusCode).toBe(200);
    expect(batch.json().results.map((r: { status: string }) => r.status)).toEqual(["accepted", "rejected", "accepted"]);
    expect(batch.json().results[1].error).toMatchObject({ code: "invalid_event" });
    expect(await streamLength(h)).toBeGreaterThan(0);
    // a surrogate pair (an emoji sent as two escapes) is well-formed
    const pair = await publish(
      h,
      '{"id":"e-pair","type":"job.done","correlationId":"c","payload":{"s":"\\ud83d\\ude00"}}',
    );
    expect(pair.statusCode).toBe(202);
  });

  it("400 invalid_event for a body that is not JSON, not an object, or has extra fields", async () => {
    const h = await makeApp();
    const bodies = [
      "",
      "not json",
      '{"id": "e1",',
      "[]",
      '"a string"',
      "42",
      "null",
      JSON.stringify({ ...ev("e1"), extra: true }),
      '{"id":"e1","type":"job.done","correlationId":"c","payload":{"__proto__":{"polluted":true}}}',
    ];
    for (const body of bodies) {
      const res = await publish(h, body);
      expect(res.statusCode, body).toBe(400);
      expect(res.json().error).toMatchObject({ code: "invalid_event", issues: expect.any(Array) });
    }
    // invalid UTF-8
    const res = await h.app.inject({
      method: "POST",
      url: "/v1/events",
      payload: Buffer.from([0x7b, 0x22, 0xff, 0x22, 0x7d]),
      headers: {
        "content-type": "application/json",
        "rendezvous-producer": "acme/billing",
        authorization: "Bearer pk_billing",
      },
    });
    expect(res.statusCode).toBe(400);
    expect(errorCode(res)).toBe("invalid_event");
    expect(await streamLength(h)).toBe(0);
  });

  it("any content type is read as the raw JSON body (no 415)", async () => {
    const h = await makeApp();
    for (const [i, ct] of ["text/plain", "application/octet-stream", "application/json; charset=utf-8"].entries()) {
      const res = await publish(h, ev(`ct${i}`), { headers: { "content-type": ct } });
      expect(res.statusCode, ct).toBe(202);
    }
  });

  it("payload schema: a breaking payload is 400 with issues naming the field; no schema accepts any object", async () => {
    const h = await makeApp();
    const bad = await publish(h, { id: "o1", type: "order.paid", correlationId: "ord-1", payload: { amount: "ten" } });
    expect(bad.statusCode).toBe(400);
    expect(bad.json().error).toMatchObject({
      code: "invalid_event",
      issues: [{ path: ["payload", "amount"], message: "must be number" }],
    });
    const missing = await publish(h, { id: "o2", type: "order.paid", correlationId: "ord-1" });
    expect(missing.statusCode).toBe(400);
    expect(missing.json().error.issues).toEqual([{ path: ["payload", "amount"], message: expect.any(String) }]);
    const several = await publish(h, {
      id: "o3",
      type: "order.paid",
      correlationId: "ord-1",
      payload: { amount: "x", currency: "EURO" },
    });
    expect(several.json().error.issues.map((i: { path: string[] }) => i.path.join("."))).toEqual([
      "payload.amount",
      "payload.currency",
    ]);
    const good = await publish(h, { id: "o4", type: "order.paid", correlationId: "ord-1", payload: { amount: 10 } });
    expect(good.statusCode).toBe(202);
    const free = await publish(h, ev("f1", { payload: { anything: [1, { deep: null }] } }));
    expect(free.statusCode).toBe(202);
    expect(await streamLength(h)).toBe(2);
  });

  it("403 forbidden_event_type: a type outside the producer's list (exact and prefix patterns)", async () => {
    const h = await makeApp();
    expect((await publish(h, ev("a1", { type: "job.anything.here" }))).statusCode).toBe(202); // job.*
    expect(
      (await publish(h, { id: "a2", type: "order.paid", correlationId: "c", payload: { amount: 1 } })).statusCode,
    ).toBe(202);
    for (const type of ["order.refunded", "jobs.done", "job", "other"]) {
      const res = await publish(h, ev(`f-${type}`, { type }));
      expect(res.statusCode, type).toBe(403);
      expect(res.json().error).toMatchObject({ code: "forbidden_event_type", type });
    }
    expect(await streamLength(h)).toBe(2);
  });

  it("413 payload_too_large: the raw body is bounded by maxPayloadBytes; exactly the limit is accepted", async () => {
    const h = await makeApp();
    const base = JSON.stringify(ev("big", { payload: { s: "" } }));
    const exact = JSON.stringify(ev("big", { payload: { s: "x".repeat(h.config.maxPayloadBytes - base.length) } }));
    expect(Buffer.byteLength(exact)).toBe(h.config.maxPayloadBytes);
    expect((await publish(h, exact)).statusCode).toBe(202);
    const over = JSON.stringify(ev("big2", { payload: { s: "x".repeat(h.config.maxPayloadBytes - base.length + 1) } }));
    const res = await publish(h, over);
    expect(res.statusCode).toBe(413);
    expect(res.json()).toEqual({ error: { code: "payload_too_large", message: expect.any(String) } });
    // even without credentials the size is checked first; nothing was read into the store
    const anon = await publish(h, over, { producer: null, key: null });
    expect(anon.statusCode).toBe(413);
    expect(await streamLength(h)).toBe(1);
  });

  it("a credential for tenant A never writes into tenant B: a body field naming B is refused", async () => {
    const h = await makeApp();
    const forged = await publish(h, ev("e1", { tenant: "globex" }));
    expect(forged.statusCode).toBe(400);
    expect(forged.json().error.code).toBe("invalid_event");
    const producerField = await publish(h, ev("e2", { producer: "billing" }));
    expect(producerField.statusCode).toBe(400);
    expect(await streamLength(h)).toBe(0);
    // the accepted event lands in the credential's tenant only
    expect((await publish(h, ev("e3"))).json().event.tenant).toBe("acme");
    expect(await h.store.getEvent("globex", "billing", "e3")).toBeNull();
  });
});
