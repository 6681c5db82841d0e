import { isRendezvousError } from "@rendezvous/protocol";
import { describe, expect, it } from "vitest";
import { ensurePartitionCount, explainWait, listWaits, Store } from "../src/index.js";
import { tagPartition, untagPartition } from "../src/keys.js";
import { event, ingestOne, makeStore, matchOne } from "./helpers.js";

const spec = (runId: string, position: string, correlationId: string, eventType = "job.done") => ({
  runId,
  position,
  eventType,
  correlationId,
});

describe("listWaits", () => {
  it("lists a run's waits only, even when another run shares its (short) run digest", async () => {
    const h = makeStore();
    // find two run ids of one tenant whose 4-character run digests collide (birthday: a few thousand tries)
    const seen = new Map<string, string>();
    let pair: [string, string] | undefined;
    for (let i = 0; !pair; i++) {
      const runId = `run-${i}`;
      const d = h.store.keys.runDigest("acme", runId);
      const other = seen.get(d);
      if (other) pair = [other, runId];
      else seen.set(d, runId);
    }
    const [a, b] = pair;
    for (const runId of [a, b, a]) {
      await h.store.register("acme", {
        runId,
        position: `pos-${runId}-${Math.random()}`,
        eventType: "job.done",
        correlationId: "j1",
      });
    }
    const listed = await listWaits(h.store, "acme", { runId: a }, { limit: 10 });
    expect(listed.waits.map((w) => w.runId)).toEqual([a, a]);
    expect((await listWaits(h.store, "acme", { runId: b }, { limit: 10 })).waits).toHaveLength(1);
  });

  it("tags partitions with three characters, both ways, up to the largest partition count", () => {
    for (const p of [0, 1, 15, 63, 64, 4095, 4096, 16383]) expect(untagPartition(tagPartition(p))).toBe(p);
    expect(tagPartition(16383)).toHaveLength(3);
  });

  it("pages through a tenant's waits by run, by type, by match key and by state, without another tenant's", async () => {
    const h = makeStore({ partitions: 4 });
    const made: string[] = [];
    for (let i = 0; i < 7; i++) made.push((await h.store.register("acme", spec("run-1", `p${i}`, `c${i}`))).wait.id);
    const other = (await h.store.register("acme", spec("run-2", "p", "c9", "other.type"))).wait.id;
    await h.store.register("globex", spec("run-1", "p0", "c0"));
    await h.store.cancel("acme", made[0] as string);

    const seen: string[] = [];
    let cursor: string | undefined;
    do {
      const page = await listWaits(h.store, "acme", { runId: "run-1" }, { limit: 3, cursor });
      expect(page.waits.length).toBeLessThanOrEqual(3);
      seen.push(...page.waits.map((w) => w.id));
      cursor = page.nextCursor ?? undefined;
    } while (cursor);
    expect(seen.sort()).toEqual([...made].sort());

    const all = await listWaits(h.store, "acme", {}, { limit: 100 });
    expect(all.waits.map((w) => w.id).sort()).toEqual([...made, other].sort());
    expect(all.nextCursor).toBeNull();
    const byType = await listWaits(h.store, "acme", { eventType: "other.type" }, { limit: 100 });
    expect(byType.waits.map((w) => w.id)).toEqual([other]);
    const byKey = await listWaits(h.store, "acme", { eventType: "job.done", correlationId: "c3" }, { limit: 100 });
    expect(byKey.waits.map((w) => w.id)).toEqual([made[3]]);
    const cancelled = await listWaits(h.store, "acme", { state: "cancelled" }, { limit: 100 });
    expect(cancelled.waits.map((w) => w.id)).toEqual([made[0]]);
    const waiting = await listWaits(h.store, "acme", { state: "waiting", runId: "run-1" }, { limit: 100 });
    expect(waiting.waits).toHaveLength(6);
    await expect(listWaits(h.store, "acme", {}, { limit: 5, cursor: "garbage!" })).rejects.toSatisfy((e) =>
      isRendezvousError(e, "invalid_request"),
    );
  });
});

describe("explainWait", () => {
  const opts = { backlogThresholdMs: 1000 };

  it("no_signal, then correlation_mismatch with the near misses, then rejected_signal", async () => {
    const h = makeStore({ partitions: 4 }, false);
    const { wait } = await h.store.register("acme", spec("run-1", "p", "order-1", "order.paid"));
    expect((await explainWait(h.store, wait, opts)).verdict).toBe("no_signal");

    await matchOne(h, await ingestOne(h, event("e1", "order-2", { type: "order.paid" })));
    await matchOne(h, await ingestOne(h, event("e2", "order-1", { type: "order.shipped" })));
    await matchOne(h, await ingestOne(h, event("e3", "other", { type: "unrelated" })));
    const mismatch = await explainWait(h.store, wait, opts);
    expect(mismatch.verdict).toBe("correlation_mismatch");
    const misses = mismatch.details.nearMisses as Array<{ id: string; differs: string }>;
    expect(misses.map((m) => [m.id, m.differs]).sort()).toEqual([
      ["e1", "correlationId"],
      ["e2", "type"],
    ]);

    await h.store.recordRejections("acme", [
      { producer: "svc", eventType: "order.paid", correlationId: "order-1", eventId: "bad", reason: "invalid_event" },
    ]);
    const rejected = await explainWait(h.store, wait, opts);
    expect(rejected.verdict).toBe("rejected_signal");
    expect(rejected.details.rejections).toMatchObject([{ eventId: "bad", reason: "invalid_event" }]);
  });

  it("backlog when the partition holds unprocessed events older than the threshold; it takes precedence", async () => {
    const h = makeStore({ partitions: 1 }, false);
    const { wait } = await h.store.register("acme", spec("run-1", "p", "order-1"));
    await ingestOne(h, event("e1", "someone-else"));
    expect((await explainWait(h.store, wait, { backlogThresholdMs: 60_000 })).verdict).toBe("no_signal");
    await new Promise((r) => setTimeout(r, 30));
    const b = await explainWait(h.store, wait, { backlogThresholdMs: 10 });
    expect(b.verdict).toBe("backlog");
    expect(b.details.backlog).toMatchObject({ partition: 0 });
    expect((b.details.backlog as { oldestUnprocessedAgeMs: number }).oldestUnprocessedAgeMs).toBeGreaterThan(10);
  });

  it("a settled wait's verdict is its state", async () => {
    const h = makeStore();
    const { wait } = await h.store.register("acme", spec("run-1", "p", "x"));
    const cancelled = await h.store.cancel("acme", wait.id);
    expect(await explainWait(h.store, cancelled, opts)).toMatchObject({ state: "cancelled", verdict: "cancelled" });
  });
});

describe("partition count", () => {
  it("is stored on first start and a different count is refused with a clear message", async () => {
    const h = makeStore({ partitions: 4 });
    await ensurePartitionCount(h.store);
    await ensurePartitionCount(h.store);
    const other = new Store({
      redis: h.redis,
      prefix: h.prefix,
      config: { ...h.store.config, partitions: 8 },
    });
    await expect(ensurePartitionCount(other)).rejects.toThrow(/created with 4 partitions; the config says 8/);
  });
});
