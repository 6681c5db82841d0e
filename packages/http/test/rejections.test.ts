/**
 * A refusal is remembered whatever its detail holds: a lone UTF-16 surrogate in an
 * issue path or message (a payload key sent as `"\ud800"`) is stored as U+FFFD, so the
 * record is written and `explain` says `rejected_signal`.
 */

import { createLogger, explainWait } from "@rendezvous/engine";
import { isWellFormed } from "@rendezvous/protocol";
import { describe, expect, it } from "vitest";
import { makeApp, publish, send } from "./helpers.js";

describe("refusal records", () => {
  it("a refusal whose detail holds a lone surrogate is recorded; explain says rejected_signal", async () => {
    const warnings: unknown[] = [];
    const logger = createLogger({ level: "warn" });
    logger.warn = ((obj: unknown) => {
      warnings.push(obj);
    }) as typeof logger.warn;
    const h = await makeApp({}, { logger });
    for (const [i, send_] of [
      (raw: string) => publish(h, raw),
      (raw: string) => send(h, "/v1/events/batch", `{"events":[${raw}]}`),
    ].entries()) {
      const correlationId = `lone-${i}`;
      const { wait } = await h.store.register("acme", {
        runId: `run-${i}`,
        position: "p",
        eventType: "job.done",
        correlationId,
      });
      // the key arrives escaped: JSON.parse gives a string holding a lone high surrogate
      const raw = `{"id":"e-${i}","type":"job.done","correlationId":"${correlationId}","payload":{"\\ud800x":1}}`;
      const res = await send_(raw);
      expect(res.statusCode).toBeLessThan(500);
      expect(res.body).toContain("invalid_event");
      const explained = await explainWait(h.store, wait, { backlogThresholdMs: 60_000 });
      expect(explained.verdict, JSON.stringify(warnings)).toBe("rejected_signal");
      const [rejection] = explained.details.rejections as Array<{ eventId: string; reason: string; detail: string }>;
      expect(rejection).toMatchObject({ eventId: `e-${i}`, reason: "invalid_event" });
      expect(rejection?.detail).toContain("\ufffdx");
      expect(isWellFormed(rejection?.detail ?? "")).toBe(true);
    }
    expect(warnings).toEqual([]);
  });

  it("the store keeps a detail cut inside a surrogate pair well-formed", async () => {
    const h = await makeApp();
    const detail = `${"x".repeat(499)}\ud83d\ude00`; // the 500-unit cut falls between the pair
    await h.store.recordRejections("acme", [
      {
        producer: "billing",
        eventType: "job.done",
        correlationId: "cut",
        eventId: "e",
        reason: "invalid_event",
        detail,
      },
    ]);
    const [r] = await h.store.rejections("acme", "job.done", "cut");
    expect(r?.detail).toBe(`${"x".repeat(499)}\ufffd`);
  });
});
