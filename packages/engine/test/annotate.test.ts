/**
 * Timeline annotations through `annotateWait` and `annotateWaits`: a continuation handed
 * out is recorded once per job id, however often the dispatcher re-handles the outbox
 * entry (a crash after recording, before acknowledging), also on a wait whose dispatch
 * was recorded by an earlier version; other annotations are recorded each time. Entries
 * appended as text after a JSON record read as the last of its history, in Lua and in
 * TypeScript alike, and the next write of the record takes them in.
 */
import { describe, expect, it } from "vitest";
import { event, ingestOne, makeStore, matchOne } from "./helpers.js";

async function resolvedWait(payload: Record<string, unknown> = { n: "e1" }) {
  const h = makeStore();
  const { wait } = await h.store.register("acme", {
    runId: "r",
    position: "p",
    eventType: "job.done",
    correlationId: "j1",
  });
  await matchOne(h, await ingestOne(h, event("e1", "j1", { payload })));
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

describe("entries appended as text", () => {
  const rawOf = async (h: ReturnType<typeof makeStore>, id: string) =>
    String(await h.redis.hget(h.store.keys.partition(h.store.keys.waitPartition(id) as number).waits, id));

  it("follow the record, read as the last entries of its history, and the next write takes them in", async () => {
    const { h, id } = await resolvedWait();
    const before = await rawOf(h, id);
    h.tick(2);
    await h.store.annotateMany([dispatched(id)]);
    const raw = await rawOf(h, id);
    // the record itself is untouched: the entry follows it
    expect(raw.startsWith(`${before}\u001e`)).toBe(true);
    const read = await h.store.getWait("acme", id);
    expect(read?.history.map((x) => x.what)).toEqual(["registered", "resolved", "continuation_dispatched"]);
    expect(read?.history.at(-1)).toEqual({
      what: "continuation_dispatched",
      at: new Date(h.clock.now).toISOString(),
      queue: "continuations.acme",
      jobId: id,
    });
    // Lua reads it the same (annotateWait decodes the record and replies it whole)
    h.tick(1);
    const annotated = await h.store.annotate(null, id, "continuation_dispatched", { webhook: "http://x", status: 200 });
    expect(annotated.history.slice(0, 3)).toEqual(read?.history);
    expect(annotated.history.map((x) => x.what)).toEqual([
      "registered",
      "resolved",
      "continuation_dispatched",
      "continuation_dispatched",
    ]);
    // written whole: JSON again, with nothing appended
    expect(await rawOf(h, id)).not.toContain("\u001e");
    expect(await h.store.getWait("acme", id)).toEqual(annotated);
  });

  it("are taken in by the consumption, in order", async () => {
    const { h, id } = await resolvedWait();
    await h.store.annotateMany([dispatched(id)]);
    await h.store.annotateMany([{ waitId: id, what: "sweeper_rescheduled", detail: {} }]);
    const { first, wait } = await h.store.consume("acme", id, "w1");
    expect(first).toBe(true);
    expect(wait.history.map((x) => x.what)).toEqual([
      "registered",
      "resolved",
      "continuation_dispatched",
      "sweeper_rescheduled",
      "consumed",
    ]);
    expect(await rawOf(h, id)).not.toContain("\u001e");
  });

  it("leave a payload holding the separator intact (JSON escapes it)", async () => {
    const payload = { text: "a\u001eb", nested: ["\u001e"] };
    const { h, id } = await resolvedWait(payload);
    await h.store.annotateMany([dispatched(id)]);
    const w = await h.store.getWait("acme", id);
    expect(w?.resolution?.event?.payload).toEqual(payload);
    expect(w?.history.filter((x) => x.what === "continuation_dispatched")).toHaveLength(1);
    const { wait } = await h.store.consume("acme", id, "w1");
    expect(wait.resolution?.event?.payload).toEqual(payload);
  });

  it("are not used on a waiting wait's compact record, which becomes JSON with its history", async () => {
    const h = makeStore();
    const { wait } = await h.store.register("acme", { runId: "r", position: "p", eventType: "t", correlationId: "c" });
    expect((await rawOf(h, wait.id)).startsWith("{")).toBe(false);
    const once = { waitId: wait.id, what: "sweeper_rescheduled" as const, detail: {}, once: true };
    await h.store.annotateMany([once]);
    await h.store.annotateMany([once]);
    const raw = await rawOf(h, wait.id);
    expect(raw.startsWith("{")).toBe(true);
    expect(raw).not.toContain("\u001e");
    const w = await h.store.getWait("acme", wait.id);
    expect(w?.state).toBe("waiting");
    expect(w?.history.map((x) => x.what)).toEqual(["registered", "sweeper_rescheduled"]);
  });

  it("one call records the waits of several partitions and kinds; unknown waits are skipped", async () => {
    const { h, id } = await resolvedWait();
    const { wait } = await h.store.register("acme", {
      runId: "r9",
      position: "p",
      eventType: "t",
      correlationId: "c9",
    });
    await h.store.annotateMany([
      dispatched(id),
      { waitId: wait.id, what: "sweeper_rescheduled", detail: {} },
      dispatched("w0.AAAAAAAAAAAAAAAA"),
      dispatched("not-a-wait-id"),
    ]);
    expect((await h.store.getWait("acme", id))?.history.at(-1)?.what).toBe("continuation_dispatched");
    expect((await h.store.getWait("acme", wait.id))?.history.at(-1)?.what).toBe("sweeper_rescheduled");
  });
});
