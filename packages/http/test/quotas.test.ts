/** Count quotas on the producer routes (docs/api.md, Quotas): bufferedEvents, counted after the match. */
import { describe, expect, it } from "vitest";
import { ev, makeApp, publish, publishBatch, snapshot } from "./helpers.js";

/** Matches every event of the stream of each partition, as a matcher would (no consumer group needed here). */
async function matchAll(h: Awaited<ReturnType<typeof makeApp>>) {
  for (const p of h.store.keys.allPartitions()) {
    const entries = await h.redis.xrange(h.store.keys.partition(p).stream, "-", "+");
    for (const [id, fields] of entries) {
      const ks = fields[fields.indexOf("ks") + 1] as string;
      // one event per entry here (single sends), its encoded event key
      await h.store.match(p, [{ streamId: id, eventKey: ks }]);
    }
  }
}

describe("bufferedEvents quota", () => {
  it("once the matcher has buffered the quota's worth, the tenant's producers get 429 quota_exceeded, nothing stored; another tenant is not refused", async () => {
    const h = await makeApp({ quotas: { bufferedEvents: 2 } });
    for (const id of ["b1", "b2"]) expect((await publish(h, ev(id))).statusCode).toBe(202);
    // not matched yet: not counted (the lag is the matchers' backlog)
    expect((await publish(h, ev("b3"))).statusCode).toBe(202);
    await matchAll(h);
    expect((await h.store.quotas.usage("acme")).bufferedEvents).toBe(3);
    const before = await snapshot(h);
    const refused = await publish(h, ev("b4"));
    expect(refused.statusCode).toBe(429);
    expect(refused.headers["retry-after"]).toBe("1");
    expect(refused.json().error).toMatchObject({ code: "quota_exceeded", quota: "bufferedEvents", limit: 2, usage: 3 });
    const batch = await publishBatch(h, [ev("b5"), ev("b6")]);
    expect(batch.statusCode).toBe(429);
    expect(await snapshot(h)).toEqual(before);
    // another tenant's producer
    expect((await publish(h, ev("g1"), { producer: "globex/billing", key: "pk_globex" })).statusCode).toBe(202);
    // a registration that takes a buffered event makes room
    await h.store.register("acme", {
      runId: "r",
      position: "p",
      eventType: "job.done",
      correlationId: "job-b1",
    });
    await h.store.register("acme", { runId: "r2", position: "p", eventType: "job.done", correlationId: "job-b2" });
    expect((await h.store.quotas.usage("acme")).bufferedEvents).toBe(1);
    expect((await publish(h, ev("b4"))).statusCode).toBe(202);
  });
});
