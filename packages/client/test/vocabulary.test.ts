/**
 * One vocabulary for options: a wait is named with the fields of `POST /v1/waits`
 * everywhere (`eventType`, `correlationId`, `timeoutMs`…); `waitFor`'s older `event`
 * is a deprecated alias that still works. (End to end against a real server:
 * packages/server/test/sdk.test.ts calls `waitFor` with the alias, the pack test's
 * host program with `eventType`.)
 */
import { describe, expect, expectTypeOf, it } from "vitest";
import type { HostClient, WaitForRequest } from "../src/index.js";
import { waitSpecOf } from "../src/requests.js";

const base = { runId: "r", position: "p", correlationId: "c" };

describe("request vocabulary", () => {
  it("sends the POST /v1/waits fields, eventType by its name", () => {
    expect(waitSpecOf({ ...base, eventType: "order.paid", timeoutMs: 5000, metadata: { a: 1 } })).toEqual({
      ...base,
      eventType: "order.paid",
      timeoutMs: 5000,
      metadata: { a: 1 },
    });
    expect(
      waitSpecOf({ ...base, eventType: "x", deadline: "2030-01-01T00:00:00Z", since: "2029-01-01T00:00:00Z" }),
    ).toEqual({
      ...base,
      eventType: "x",
      deadline: "2030-01-01T00:00:00Z",
      since: "2029-01-01T00:00:00Z",
    });
  });

  it("reads the deprecated `event` as eventType, and sends no `event` field", () => {
    const spec = waitSpecOf({ ...base, event: "order.paid", timeoutMs: 1 });
    expect(spec).toEqual({ ...base, eventType: "order.paid", timeoutMs: 1 });
    expect(spec).not.toHaveProperty("event");
  });

  it("sends the shapes: anyOf as eventTypes, count and failureTypes as named", () => {
    expect(waitSpecOf({ ...base, anyOf: ["pay.ok", "pay.failed"], failureTypes: ["pay.failed"] })).toEqual({
      ...base,
      eventTypes: ["pay.ok", "pay.failed"],
      failureTypes: ["pay.failed"],
    });
    expect(waitSpecOf({ ...base, eventType: "approval", count: 3 })).toEqual({
      ...base,
      eventType: "approval",
      count: 3,
    });
    expect(() => waitSpecOf({ ...base, anyOf: ["a"], eventType: "a" } as never)).toThrow(/not both/);
    expectTypeOf<{
      runId: string;
      position: string;
      correlationId: string;
      anyOf: string[];
      count: number;
    }>().toExtend<WaitForRequest>();
    expectTypeOf<{
      runId: string;
      position: string;
      correlationId: string;
      anyOf: string[];
      eventType: string;
    }>().not.toExtend<WaitForRequest>();
  });

  it("refuses a wait without an event type, or with the two names disagreeing", () => {
    expect(() => waitSpecOf({ ...base } as never)).toThrow(/needs an eventType/);
    expect(() => waitSpecOf({ ...base, eventType: "a", event: "b" } as never)).toThrow(/disagree/);
    expect(waitSpecOf({ ...base, eventType: "a", event: "a" } as never).eventType).toBe("a");
  });

  it("types both spellings, and not both at once", () => {
    expectTypeOf<{
      runId: string;
      position: string;
      correlationId: string;
      eventType: string;
    }>().toExtend<WaitForRequest>();
    expectTypeOf<{
      runId: string;
      position: string;
      correlationId: string;
      event: string;
    }>().toExtend<WaitForRequest>();
    expectTypeOf<{
      runId: string;
      position: string;
      correlationId: string;
      event: string;
      eventType: string;
    }>().not.toExtend<WaitForRequest>();
    expectTypeOf<HostClient["waitFor"]>().parameter(0).toEqualTypeOf<WaitForRequest>();
    expectTypeOf<Parameters<HostClient["launchAndWait"]>[0]["eventType"]>().toEqualTypeOf<string | undefined>();
  });
});
