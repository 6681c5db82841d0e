/** The zod-free envelope check (src/producers/envelope.ts) answers as zod does, or leaves it to zod. */
import { EventInput } from "@rendezvous/protocol";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { plainEnvelope } from "../src/producers/envelope.js";

/** Strings near the bounds, with lone surrogates and characters a type may not hold. */
const str = (max: number) =>
  fc.oneof(
    fc.string({ maxLength: 8 }),
    fc.string({ unit: "binary", maxLength: 8 }),
    fc.constantFrom("", "a", "\ud800", "x\udc00y", "Order.Paid", "order.paid", "-x", "a*", "é", "a".repeat(max)),
    fc.integer({ min: max - 2, max: max + 2 }).map((n) => "b".repeat(n)),
    fc.stringMatching(/^[a-z0-9][a-z0-9._-]{0,20}$/),
  );
const field = (max: number) => fc.oneof(str(max), fc.integer(), fc.constant(null), fc.boolean(), fc.array(str(4)));
const payload = fc.oneof(
  fc.dictionary(fc.oneof(fc.string({ maxLength: 4 }), fc.constant("\ud800")), fc.jsonValue({ maxDepth: 2 })),
  fc.constant({ n: Number.POSITIVE_INFINITY }),
  fc.constant({ deep: { s: "ok\udfff" } }),
  fc.jsonValue({ maxDepth: 2 }),
);
/** Mostly valid events, one field at a time off. */
const likely = fc.record(
  {
    id: fc.oneof(fc.string({ minLength: 1, maxLength: 12 }), str(200)),
    type: fc.oneof(fc.stringMatching(/^[a-z0-9][a-z0-9._-]{0,20}$/), str(128)),
    correlationId: fc.oneof(fc.string({ minLength: 1, maxLength: 12 }), str(256)),
    payload,
  },
  { requiredKeys: ["id", "type", "correlationId"] },
);
const anything = fc.record(
  {
    id: field(200),
    type: field(128),
    correlationId: field(256),
    occurredAt: fc.oneof(fc.constant("2026-12-01T10:00:00Z"), fc.constant("yesterday")),
    payload,
    extra: fc.integer(),
  },
  { requiredKeys: [] },
);
const candidate = fc.oneof(likely, anything);

describe("plainEnvelope", () => {
  it("a plainly valid event is checked without zod, to what zod answers: same keys in the same order, same payload", () => {
    const raw = { payload: { amount: 1 }, correlationId: "c-1", type: "order.paid", id: "e-1" };
    const plain = plainEnvelope(raw);
    expect(plain).toBeDefined();
    const zod = EventInput.parse(raw);
    expect(plain).toEqual(zod);
    expect(Object.keys(plain as object)).toEqual(Object.keys(zod));
    expect(plain?.payload).toBe(raw.payload);
    expect(Object.keys(plainEnvelope({ id: "e", type: "t", correlationId: "c" }) as object)).toEqual([
      "id",
      "type",
      "correlationId",
    ]);
  });

  it("whatever it answers, zod answers the same; what zod refuses it never accepts", () => {
    let accepted = 0;
    fc.assert(
      fc.property(candidate, (raw) => {
        const plain = plainEnvelope(raw);
        const zod = EventInput.safeParse(raw);
        // (and the other way: zod's every plain success, without an occurredAt, is the fast one's too)
        if (zod.success && !Object.hasOwn(raw, "occurredAt")) expect(plain).toBeDefined();
        if (plain === undefined) return;
        accepted++;
        expect(zod.success).toBe(true);
        if (!zod.success) return;
        expect(plain).toEqual(zod.data);
        expect(Object.keys(plain)).toEqual(Object.keys(zod.data));
      }),
      { numRuns: 2000 },
    );
    expect(accepted).toBeGreaterThan(20);
  });

  it("leaves to zod an occurredAt, an extra key, and anything not an object", () => {
    const ok = { id: "e", type: "t", correlationId: "c" };
    expect(plainEnvelope({ ...ok, occurredAt: "2026-12-01T10:00:00Z" })).toBeUndefined();
    expect(plainEnvelope({ ...ok, extra: 1 })).toBeUndefined();
    expect(plainEnvelope({ ...ok, payload: [] })).toBeUndefined();
    expect(plainEnvelope({ ...ok, payload: null })).toBeUndefined();
    for (const v of [null, [], "e", 1]) expect(plainEnvelope(v)).toBeUndefined();
  });
});
