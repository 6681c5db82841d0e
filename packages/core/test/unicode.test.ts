import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { EventInput, illFormedPath, isWellFormed, LONE_SURROGATE, WaitSpec } from "../src/index.js";

/** Whether `path` names an ill-formed key on the way, or leads to an ill-formed string. */
function leadsToIllFormed(value: unknown, path: Array<string | number>): boolean {
  let v = value;
  for (const step of path) {
    if (typeof step === "string" && !isWellFormed(step)) return true;
    v = (v as Record<string | number, unknown>)[step];
  }
  return typeof v === "string" && !isWellFormed(v);
}

/** Every string and key of a JSON value, the naive way. */
function strings(value: unknown): string[] {
  if (typeof value === "string") return [value];
  if (Array.isArray(value)) return value.flatMap(strings);
  if (value !== null && typeof value === "object") {
    return Object.entries(value).flatMap(([k, v]) => [k, ...strings(v)]);
  }
  return [];
}

describe("well-formed Unicode (no lone surrogates)", () => {
  it("illFormedPath finds a lone surrogate in any string or key, and only then; the path leads to it", () => {
    // strings of any UTF-16 units: lone surrogates included
    const units = fc.string({
      unit: fc.integer({ min: 0, max: 0xffff }).map((u) => String.fromCharCode(u)),
      maxLength: 6,
    });
    fc.assert(
      fc.property(
        fc.json().map((j) => JSON.parse(j) as unknown),
        units,
        fc.boolean(),
        (json, s, asKey) => {
          const value = { nested: [json, asKey ? { [s]: 1 } : { s }] };
          const path = illFormedPath(value);
          const bad = strings(value).some((x) => !isWellFormed(x));
          expect(path !== null).toBe(bad);
          if (path) expect(leadsToIllFormed(value, path)).toBe(true);
        },
      ),
      { numRuns: 2000, seed: 20261130 },
    );
  });

  it("the schemas refuse a lone surrogate in ids, correlation ids and objects, and take a surrogate pair", () => {
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
  });
});
