import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { EventInput, isWellFormed, LONE_SURROGATE, NUMBER_OUT_OF_RANGE, unstorable, WaitSpec } from "../src/index.js";

/** Whether `path` names an ill-formed key on the way, or leads to an ill-formed string or an infinite number. */
function leadsToUnstorable(value: unknown, path: Array<string | number>): boolean {
  let v = value;
  for (const step of path) {
    if (typeof step === "string" && !isWellFormed(step)) return true;
    v = (v as Record<string | number, unknown>)[step];
  }
  return (typeof v === "string" && !isWellFormed(v)) || (typeof v === "number" && !Number.isFinite(v));
}

/** Every string, key and number of a JSON value, the naive way. */
function leaves(value: unknown): unknown[] {
  if (typeof value === "string" || typeof value === "number") return [value];
  if (Array.isArray(value)) return value.flatMap(leaves);
  if (value !== null && typeof value === "object") {
    return Object.entries(value).flatMap(([k, v]) => [k, ...leaves(v)]);
  }
  return [];
}
const bad = (x: unknown) =>
  (typeof x === "string" && !isWellFormed(x)) || (typeof x === "number" && !Number.isFinite(x));

describe("what cannot be stored as sent: lone surrogates, numbers that read as Infinity", () => {
  it("unstorable finds a lone surrogate in any string or key, or a number that read as Infinity, and only then; the path leads to it", () => {
    // strings of any UTF-16 units: lone surrogates included
    const units = fc.string({
      unit: fc.integer({ min: 0, max: 0xffff }).map((u) => String.fromCharCode(u)),
      maxLength: 6,
    });
    const numbers = fc.oneof(fc.double(), fc.constantFrom(Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY, 1e308));
    fc.assert(
      fc.property(
        fc.json().map((j) => JSON.parse(j) as unknown),
        units,
        numbers.filter((n) => !Number.isNaN(n)),
        fc.constantFrom("key", "value", "number"),
        (json, s, n, where) => {
          const leaf = where === "key" ? { [s]: 1 } : where === "value" ? { s } : { n };
          const value = { nested: [json, leaf] };
          const found = unstorable(value);
          expect(found !== null).toBe(leaves(value).some(bad));
          if (found) {
            expect(leadsToUnstorable(value, found.path)).toBe(true);
            expect([LONE_SURROGATE, NUMBER_OUT_OF_RANGE]).toContain(found.message);
          }
        },
      ),
      { numRuns: 3000, seed: 20261130 },
    );
  });

  it("the schemas refuse a lone surrogate in ids, correlation ids and objects (a surrogate pair is fine), and an infinite number in objects", () => {
    const lone = "\ud800";
    const event = { id: "e1", type: "job.done", correlationId: "c" };
    for (const bad of [
      { ...event, id: `e${lone}` },
      { ...event, correlationId: `c${lone}` },
      { ...event, payload: { a: [lone] } },
    ]) {
      const r = EventInput.safeParse(bad);
      expect(r.success).toBe(false);
      expect(r.error?.issues[0]?.message).toBe(LONE_SURROGATE);
    }
    expect(EventInput.safeParse({ ...event, payload: { s: "\ud83d\ude00" } }).success).toBe(true);
    const wait = { runId: "r", position: "p", eventType: "job.done", correlationId: "c" };
    expect(WaitSpec.safeParse({ ...wait, metadata: { [`k${lone}`]: 1 } }).error?.issues[0]).toMatchObject({
      path: ["metadata", `k${lone}`],
      message: LONE_SURROGATE,
    });
    expect(WaitSpec.safeParse({ ...wait, position: lone }).success).toBe(false);
    // a number JSON reads as Infinity
    const infinite = EventInput.safeParse({ ...event, payload: JSON.parse('{"a":{"n":-1e400}}') });
    expect(infinite.error?.issues[0]).toMatchObject({ path: ["payload", "a", "n"], message: NUMBER_OUT_OF_RANGE });
    expect(WaitSpec.safeParse({ ...wait, metadata: JSON.parse('{"n":[1e400]}') }).error?.issues[0]).toMatchObject({
      path: ["metadata", "n", 0],
      message: NUMBER_OUT_OF_RANGE,
    });
  });
});
