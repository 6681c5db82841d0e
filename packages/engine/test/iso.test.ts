import { describe, expect, it } from "vitest";
import { iso } from "../src/formats/iso.js";

describe("iso", () => {
  it("writes every time as Date.prototype.toISOString does", () => {
    const times = [
      0, -1, 1, 999, 1000, 86_399_999, 86_400_000, -86_400_000, -86_400_001, 951_782_400_000 /* 2000-02-29 */,
      1_796_318_188_723, 4_102_444_799_999 /* 2099-12-31T23:59:59.999 */, 253_402_300_800_000 /* year 10000 */,
      -62_198_755_200_000 /* year -0001 */, 8.64e15, -8.64e15, 1.5, -1.5, -0.5,
    ];
    let seed = 42;
    for (let i = 0; i < 20_000; i++) {
      seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648;
      // both sides of the epoch, to 2100, and runs of times within one day and one millisecond
      times.push(Math.round((seed / 2_147_483_648) * 8.2e12 - 4e12));
      if (i % 100 === 0) times.push(times[times.length - 1] as number, (times[times.length - 1] as number) + 1);
    }
    for (const ms of times) expect(iso(ms), String(ms)).toBe(new Date(ms).toISOString());
  });

  it("writes times that alternate between days (a wait's creation and its deadline) as toISOString does", () => {
    const created = Date.UTC(2026, 11, 6, 23, 46, 1, 7);
    for (let i = 0; i < 2_000; i++) {
      for (const ms of [created + i, created + i + 3_600_000, created + i + 7 * 86_400_000, created - 86_400_000]) {
        expect(iso(ms), String(ms)).toBe(new Date(ms).toISOString());
      }
    }
  });

  it("throws for a time that is no date, as toISOString does", () => {
    for (const ms of [Number.NaN, Number.POSITIVE_INFINITY, 8.64e15 + 1, -8.64e15 - 1]) {
      expect(() => iso(ms)).toThrow(RangeError);
    }
  });
});
