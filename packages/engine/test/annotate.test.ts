/**
 * Timeline annotations through `annotateWait`: a continuation handed out is recorded
 * once per job id, however often the dispatcher re-handles the outbox entry (a crash
 * after recording, before acknowledging), also on a wait whose dispatch was recorded
 * by an earlier version; other annotations are recorded each time.
 */
import { describe, expect, it } from "vitest";
import { event, ingestOne, makeStore, matchOne } from "./helpers.js";

async function resolvedWait() {
  const h = makeStore();
  const { wait } = await h.store.register("acme", {
    runId: "r",
    position: "p",
    eventType: "job.done",
    correlationId: "j1",
  });
  await matchOne(h, await ingestOne(h, event("e1", "j1")));
  return { h, id: wait.id };
}

const dispatched = (id: string, jobId = id) => ({
  waitId: id,
  what: "continuation_dispatched" as const,
  detail: { queue: "continuations.acme", jobId },
  once: true,
});

describe("continuation_dispatched", () => {
  it("recorded twice for the same job id is one timeline entry", async () => {
    const { h, id } = await resolvedWait();
    await h.store.annotateMany([dispatched(id)]);
    h.tick(5);
    await h.store.annotateMany([dispatched(id)]);
    await h.store.annotateMany([dispatched(id), dispatched(id)]);
    const w = await h.store.getWait("acme", id);
    const entries = w?.history.filter((x) => x.what === "continuation_dispatched") ?? [];
    expect(entries).toEqual([
      expect.objectContaining({ what: "continuation_dispatched", queue: "continuations.acme", jobId: id }),
    ]);
    // the first one stays: its time is the first dispatch's
    expect(entries[0]?.at).toBe(new Date(h.clock.now - 5).toISOString());
  });

  it("a wait whose dispatch an earlier version recorded gets no second entry", async () => {
    const { h, id } = await resolvedWait();
    // the record as the previous script left it: the entry in the history, nothing else
    const k = h.store.keys.partition(h.store.keys.waitPartition(id) as number);
    const raw = JSON.parse((await h.redis.hget(k.waits, id)) as string);
    raw.h.push({ at: h.clock.now, w: "continuation_dispatched", queue: "continuations.acme", jobId: id });
    await h.redis.hset(k.waits, id, JSON.stringify(raw));
    await h.store.annotateMany([dispatched(id)]);
    const w = await h.store.getWait("acme", id);
    expect(w?.history.filter((x) => x.what === "continuation_dispatched")).toHaveLength(1);
  });

  it("another job id, and annotations without `once`, are still recorded", async () => {
    const { h, id } = await resolvedWait();
    await h.store.annotateMany([dispatched(id)]);
    await h.store.annotateMany([dispatched(id, `${id}.again`)]);
    await h.store.annotateMany([{ waitId: id, what: "sweeper_rescheduled", detail: {} }]);
    await h.store.annotateMany([{ waitId: id, what: "sweeper_rescheduled", detail: {} }]);
    const w = await h.store.getWait("acme", id);
    expect(w?.history.filter((x) => x.what === "continuation_dispatched").map((x) => x.jobId)).toEqual([
      id,
      `${id}.again`,
    ]);
    expect(w?.history.filter((x) => x.what === "sweeper_rescheduled")).toHaveLength(2);
  });
});

describe("the annotation's reply", () => {
  it("is the wait as stored: on a settled wait and on a waiting one (job_attached)", async () => {
    const { h, id } = await resolvedWait();
    h.tick(3);
    const annotated = await h.store.annotate(null, id, "continuation_dispatched", {
      queue: "continuations.acme",
      jobId: id,
    });
    expect(annotated).toEqual(await h.store.getWait("acme", id));
    const { wait } = await h.store.register("acme", {
      runId: "r2",
      position: "p",
      eventType: "job.done",
      correlationId: "j2",
    });
    const attached = await h.store.attachJob("acme", wait.id, "ext-1");
    expect(attached.externalJobId).toBe("ext-1");
    expect(attached).toEqual(await h.store.getWait("acme", wait.id));
  });
});
