/**
 * The client's own wire types (src/wire.ts) stay equal to the server's (the protocol package.s zod
 * schemas): each pair is checked both ways at type level (`npm run typecheck` compiles
 * this file), and the error codes at run time against the catalogue.
 */
import * as core from "@rendezvous/protocol";
import { describe, expect, expectTypeOf, it } from "vitest";
import type { ConsumeResult } from "../src/host.js";
import type * as wire from "../src/wire.js";

describe("wire types", () => {
  it("equal core's schemas (type level: checked by npm run typecheck)", () => {
    expectTypeOf<wire.EventInput>().toEqualTypeOf<core.EventInput>();
    expectTypeOf<wire.WaitSpec>().toEqualTypeOf<core.WaitSpec>();
    expectTypeOf<wire.WaitState>().toEqualTypeOf<core.WaitState>();
    expectTypeOf<wire.ResolutionKind>().toEqualTypeOf<core.ResolutionKind>();
    expectTypeOf<wire.EventRef>().toEqualTypeOf<core.EventRef>();
    expectTypeOf<wire.CollectedEvent>().toEqualTypeOf<core.CollectedEvent>();
    expectTypeOf<wire.Resolution>().toEqualTypeOf<core.Resolution>();
    expectTypeOf<wire.HistoryWhat>().toEqualTypeOf<core.HistoryWhat>();
    // an open record (zod looseObject; its index signature brands differently): each assignable to the other
    expectTypeOf<wire.HistoryEntry>().toExtend<core.HistoryEntry>();
    expectTypeOf<core.HistoryEntry>().toExtend<wire.HistoryEntry>();
    expectTypeOf<wire.Consumption>().toEqualTypeOf<core.Consumption>();
    type Fields<W> = Omit<W, "history">;
    expectTypeOf<Fields<wire.Wait>>().toEqualTypeOf<Fields<core.Wait>>();
    expectTypeOf<wire.Wait["history"]>().toExtend<core.Wait["history"]>();
    expectTypeOf<core.Wait["history"]>().toExtend<wire.Wait["history"]>();
    expectTypeOf<wire.EventStatus>().toEqualTypeOf<core.EventStatus>();
    expectTypeOf<wire.EventRecord>().toEqualTypeOf<core.EventRecord>();
    expectTypeOf<wire.Verdict>().toEqualTypeOf<core.Verdict>();
    expectTypeOf<wire.Explanation>().toEqualTypeOf<core.Explanation>();
    expectTypeOf<wire.ErrorCode>().toEqualTypeOf<core.ErrorCode>();
    expectTypeOf<wire.Outcome>().toEqualTypeOf<core.Outcome>();
    expectTypeOf<wire.FailureError>().toEqualTypeOf<core.FailureError>();
    expectTypeOf<wire.IssuedToken>().toEqualTypeOf<core.IssuedToken>();
    expectTypeOf<Omit<ConsumeResult, "wait">>().toEqualTypeOf<Omit<core.ConsumeResult, "wait">>();
    expectTypeOf<ConsumeResult["wait"]>().toEqualTypeOf<wire.Wait>();
  });

  it("name every code of the error catalogue, and no other", () => {
    // a Record over the client's union: a missing or extra key does not compile
    const codes: Record<wire.ErrorCode, true> = {
      unauthorized: true,
      rate_limited: true,
      forbidden_event_type: true,
      not_found: true,
      invalid_request: true,
      invalid_event: true,
      payload_too_large: true,
      event_id_conflict: true,
      wait_conflict: true,
      ambiguous: true,
      not_waiting: true,
      not_resolved: true,
      lease_expired: true,
      quota_exceeded: true,
      token_invalid: true,
      deadline_passed: true,
      heartbeat_disabled: true,
      already_exists: true,
      tenant_has_waits: true,
      retry_not_allowed: true,
      unavailable: true,
      invalid_config: true,
      internal: true,
    };
    expect(Object.keys(codes).sort()).toEqual(Object.keys(core.errorCatalogue).sort());
  });
});
