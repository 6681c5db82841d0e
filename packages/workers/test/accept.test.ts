/**
 * Accept and match in one step (docs/architecture.md): with the matcher of its process
 * as acceptor (`rendezvous start`), ingest appends and matches in one script
 * (acceptEvents) when the matchers' group has caught up, and acks the entry for the
 * group there; when the group is behind (an entry undelivered, or delivered and not
 * acknowledged) it only appends, and the matcher takes the entries in stream order.
 * Nothing here starts the matcher before it is asked to catch up: a wait resolved when
 * ingest answers was resolved by the append's own script.
 */
import { DISPATCHER_GROUP, MATCHER_GROUP, type Resources, type StreamEntry } from "@rendezvous/engine";
import { eventually, makeResources } from "@rendezvous/testkit";
import { Queue } from "bullmq";
import { describe, expect, it } from "vitest";
import { continuationQueueName, Dispatcher, Matcher } from "../src/index.js";

const spec = (runId: string, correlationId: string) => ({
  runId,
  position: "step",
  eventType: "job.done",
  correlationId,
});
const ev = (id: string, correlationId: string) => ({ id, type: "job.done", correlationId, payload: { id } });

/** One partition with both groups, and a dispatcher stand-in that keeps what it is handed. */
async function setup(claimIdleMs = 300, config: { partitions?: number; fanoutCap?: number } = {}) {
  const res = makeResources({ partitions: 1, claimIdleMs, ...config });
  const k = res.store.keys.partition(0);
  for (const p of res.store.keys.allPartitions()) {
    const pk = res.store.keys.partition(p);
    await res.redis.xgroup("CREATE", pk.stream, MATCHER_GROUP, "0", "MKSTREAM");
    await res.redis.xgroup("CREATE", pk.outbox, DISPATCHER_GROUP, "0", "MKSTREAM");
  }
  const taken: StreamEntry[] = [];
  const stand = {
    handoff: { group: DISPATCHER_GROUP, consumer: "stand-in" },
    take: async (_p: number, entries: StreamEntry[]) => {
      taken.push(...entries);
    },
  };
  const matcher = new Matcher(res, { blockMs: 100, dispatcher: stand });
  return { res, k, taken, matcher, acceptor: matcher.acceptor(stand) };
}

/** What the stand-in was handed, once it holds `n` entries (the take runs at the next turn). */
const handed = (taken: StreamEntry[], n: number) =>
  eventually(async () => (taken.length >= n ? taken.map((e) => e.fields?.w) : undefined));

const acceptMatches = async (res: Resources) => (await res.metrics.acceptMatches.get()).values[0]?.value ?? 0;
const stateOf = async (res: Resources, waitId: string) => (await res.store.getWait("acme", waitId))?.state;

async function groupOf(res: Resources, stream: string) {
  const groups = (await res.redis.xinfo("GROUPS", stream)) as unknown[][];
  const g = groups.map((info) => {
    const o: Record<string, unknown> = {};
    for (let i = 0; i < info.length; i += 2) o[String(info[i])] = info[i + 1];
    return o;
  });
  return g.find((o) => o.name === MATCHER_GROUP) as { pending: number; "last-delivered-id": string };
}

describe("ingest that matches what it appends (acceptEvents)", () => {
  it("resolves in the append's script when the matchers have caught up: acked for them, handed to the dispatcher", async () => {
    const { res, k, taken, acceptor } = await setup();
    res.store.acceptWith(acceptor);
    const { wait } = await res.store.register("acme", spec("run-1", "job-1"));
    const [r] = await res.store.ingest("acme", "svc", [ev("e1", "job-1")]);
    expect(r?.status).toBe("accepted");
    const sid = r?.status === "accepted" ? r.event.streamId : "";
    // resolved when ingest answered, no matcher running
    const w = await res.store.getWait("acme", wait.id);
    expect(w?.state).toBe("resolved");
    expect(w?.resolution?.event?.id).toBe("e1");
    const group = await groupOf(res, k.stream);
    expect(group.pending).toBe(0);
    expect(group["last-delivered-id"]).toBe(sid);
    expect(await handed(taken, 1)).toEqual([wait.id]);
    expect(await acceptMatches(res)).toBe(1);
    // the event record says what the match did, as the matcher's would
    const event = await res.store.getEvent("acme", "svc", "e1");
    expect(event?.matchedWaits).toEqual([wait.id]);
  });

  it("moves the group past each entry it matched: last-delivered id, entries-read and lag stay true", async () => {
    const { res, k, acceptor } = await setup();
    res.store.acceptWith(acceptor);
    const ids: string[] = [];
    for (const n of [1, 2, 3]) {
      const { wait } = await res.store.register("acme", spec(`run-${n}`, `job-${n}`));
      const [r] = await res.store.ingest("acme", "svc", [ev(`e${n}`, `job-${n}`)]);
      expect(await stateOf(res, wait.id)).toBe("resolved");
      ids.push(r?.status === "accepted" ? r.event.streamId : "");
    }
    const info = ((await res.redis.xinfo("GROUPS", k.stream)) as unknown[][])[0] ?? [];
    const field = (name: string) => info[info.indexOf(name) + 1];
    expect(field("last-delivered-id")).toBe(ids[2]);
    expect(field("entries-read")).toBe(3);
    expect(field("lag")).toBe(0);
    expect(field("pending")).toBe(0);
    expect(await acceptMatches(res)).toBe(3);
  });

  it("where Redis cannot tell the group's entries-read count, reads the entry into the matcher and acks it", async () => {
    const { res, k, acceptor } = await setup();
    // an entry read and acked, then the group set to it by id alone: entries-read unknown
    const [e0] = await res.store.ingest("acme", "svc", [ev("e0", "job-0")]);
    const id0 = e0?.status === "accepted" ? e0.event.streamId : "";
    await res.redis.xreadgroup("GROUP", MATCHER_GROUP, "m", "COUNT", "1", "STREAMS", k.stream, ">");
    await res.redis.xack(k.stream, MATCHER_GROUP, id0);
    await res.redis.xgroup("SETID", k.stream, MATCHER_GROUP, id0);
    const info = ((await res.redis.xinfo("GROUPS", k.stream)) as unknown[][])[0] ?? [];
    expect(info[info.indexOf("entries-read") + 1]).toBeNull();
    res.store.acceptWith(acceptor);
    const { wait } = await res.store.register("acme", spec("run-1", "job-1"));
    const [r] = await res.store.ingest("acme", "svc", [ev("e1", "job-1")]);
    expect(await stateOf(res, wait.id)).toBe("resolved");
    const group = await groupOf(res, k.stream);
    expect(group.pending).toBe(0);
    expect(group["last-delivered-id"]).toBe(r?.status === "accepted" ? r.event.streamId : "");
  });

  it("matches every event of a batch in the call, buffers the one no wait takes", async () => {
    const { res, taken, acceptor } = await setup();
    res.store.acceptWith(acceptor);
    const a = (await res.store.register("acme", spec("run-a", "job-a"))).wait;
    const b = (await res.store.register("acme", spec("run-b", "job-b"))).wait;
    const out = await res.store.ingest("acme", "svc", [ev("e1", "job-a"), ev("e2", "job-b"), ev("e3", "job-c")]);
    expect(out.map((o) => o.status)).toEqual(["accepted", "accepted", "accepted"]);
    expect(await stateOf(res, a.id)).toBe("resolved");
    expect(await stateOf(res, b.id)).toBe("resolved");
    expect((await handed(taken, 2)).sort()).toEqual([a.id, b.id].sort());
    expect(await acceptMatches(res)).toBe(3);
    // the third is buffered: a wait registered now takes it
    const c = await res.store.register("acme", spec("run-c", "job-c"));
    expect(c.wait.state).toBe("resolved");
  });

  it("only appends while an entry is undelivered: the matcher then takes both in stream order", async () => {
    const { res, k, acceptor, matcher } = await setup();
    const { wait } = await res.store.register("acme", spec("run-1", "job-1"));
    // appended without the acceptor and not read: the group is behind
    await res.store.ingest("acme", "svc", [ev("first", "job-1")]);
    res.store.acceptWith(acceptor);
    await res.store.ingest("acme", "svc", [ev("second", "job-1")]);
    expect(await stateOf(res, wait.id)).toBe("waiting");
    expect(await acceptMatches(res)).toBe(0);
    expect((await groupOf(res, k.stream))["last-delivered-id"]).toBe("0-0");
    await matcher.start();
    try {
      await eventually(async () => ((await stateOf(res, wait.id)) === "resolved" ? true : undefined));
      const w = await res.store.getWait("acme", wait.id);
      // the earlier event resolved it; the later one is late for it
      expect(w?.resolution?.event?.id).toBe("first");
      await eventually(async () =>
        (await res.store.getWait("acme", wait.id))?.history.some((h) => h.what === "late_event") ? true : undefined,
      );
    } finally {
      await matcher.stop();
    }
  });

  it("only appends while an entry is delivered and not acknowledged", async () => {
    const { res, k, acceptor } = await setup();
    const a = (await res.store.register("acme", spec("run-a", "job-a"))).wait;
    const b = (await res.store.register("acme", spec("run-b", "job-b"))).wait;
    await res.store.ingest("acme", "svc", [ev("e1", "job-a")]);
    // another matcher is working on it
    await res.redis.xreadgroup("GROUP", MATCHER_GROUP, "busy-one", "COUNT", "1", "STREAMS", k.stream, ">");
    res.store.acceptWith(acceptor);
    await res.store.ingest("acme", "svc", [ev("e2", "job-b")]);
    expect(await stateOf(res, a.id)).toBe("waiting");
    expect(await stateOf(res, b.id)).toBe("waiting");
    const group = await groupOf(res, k.stream);
    expect(group.pending).toBe(1);
    expect(await acceptMatches(res)).toBe(0);
  });

  it("a duplicate re-send appends nothing and matches nothing again", async () => {
    const { res, acceptor, taken } = await setup();
    res.store.acceptWith(acceptor);
    const { wait } = await res.store.register("acme", spec("run-1", "job-1"));
    await res.store.ingest("acme", "svc", [ev("e1", "job-1")]);
    const [again] = await res.store.ingest("acme", "svc", [ev("e1", "job-1")]);
    expect(again?.status).toBe("duplicate");
    expect(await handed(taken, 1)).toHaveLength(1);
    expect(await acceptMatches(res)).toBe(1);
    const w = await res.store.getWait("acme", wait.id);
    expect(w?.history.filter((h) => h.what === "resolved")).toHaveLength(1);
  });

  it("a process that dies after the accept leaves the handed entries pending: another dispatcher dispatches once", async () => {
    const { res, k, taken, acceptor } = await setup(300);
    res.store.acceptWith(acceptor);
    const { wait } = await res.store.register("acme", spec("run-1", "job-1"));
    await res.store.ingest("acme", "svc", [ev("e1", "job-1")]);
    expect(await handed(taken, 1)).toEqual([wait.id]);
    const pending = (await res.redis.xpending(k.outbox, DISPATCHER_GROUP, "-", "+", 10)) as Array<[string, string]>;
    expect(pending.map(([, consumer]) => consumer)).toEqual(["stand-in"]);
    const dispatcher = new Dispatcher(res, { blockMs: 100 });
    await dispatcher.start();
    const queue = new Queue(continuationQueueName("acme"), { connection: res.connect("q"), prefix: res.queuePrefix });
    try {
      await eventually(async () => ((await queue.getJob(wait.id)) ? true : undefined), 5000);
      await eventually(
        async () => (((await res.redis.xpending(k.outbox, DISPATCHER_GROUP)) as [number])[0] === 0 ? true : undefined),
        5000,
      );
      expect(await queue.count()).toBe(1);
      const w = await res.store.getWait("acme", wait.id);
      expect(w?.history.filter((h) => h.what === "continuation_dispatched")).toHaveLength(1);
    } finally {
      await queue.close();
      await dispatcher.stop();
    }
  });

  it("a match that raises leaves the entry undelivered for the matcher, never acked unmatched", async () => {
    const { res, k, acceptor, matcher } = await setup();
    res.store.acceptWith(acceptor);
    const good = (await res.store.register("acme", spec("run-a", "job-1"))).wait;
    const bad = (await res.store.register("acme", spec("run-b", "job-1"))).wait;
    const record = (await res.redis.hget(k.waits, bad.id)) as string;
    await res.redis.hset(k.waits, bad.id, "{broken");
    await expect(res.store.ingest("acme", "svc", [ev("e1", "job-1")])).rejects.toThrow();
    // appended, not delivered to the matchers, the event still pending
    const group = await groupOf(res, k.stream);
    expect(group["last-delivered-id"]).toBe("0-0");
    expect(group.pending).toBe(0);
    expect(await acceptMatches(res)).toBe(0);
    // repaired, the matcher takes the entry: both waits resolved by the event
    await res.redis.hset(k.waits, bad.id, record);
    await matcher.start();
    try {
      await eventually(async () =>
        (await stateOf(res, good.id)) === "resolved" && (await stateOf(res, bad.id)) === "resolved" ? true : undefined,
      );
    } finally {
      await matcher.stop();
    }
  });

  it("hands on and counts what one partition's call matched when another partition's call fails", async () => {
    const { res, taken, acceptor } = await setup(300, { partitions: 8 });
    res.store.acceptWith(acceptor);
    const keys = res.store.keys;
    // two correlation ids of two partitions
    const ids = Array.from({ length: 64 }, (_, i) => `job-${i}`);
    const place = (c: string) => keys.matchPartition("acme", "job.done", c);
    const one = ids[0] as string;
    const other = ids.find((c) => place(c) !== place(one)) as string;
    const good = (await res.store.register("acme", spec("run-a", one))).wait;
    const bad = (await res.store.register("acme", spec("run-b", other))).wait;
    await res.redis.hset(keys.partition(place(other)).waits, bad.id, "{broken");
    await expect(res.store.ingest("acme", "svc", [ev("e1", one), ev("e2", other)])).rejects.toThrow();
    expect(await stateOf(res, good.id)).toBe("resolved");
    expect(await handed(taken, 1)).toEqual([good.id]);
    expect(await acceptMatches(res)).toBe(1);
  });

  it("a call of more events than the budget allows only appends: the matcher takes it", async () => {
    // fan-out cap 800: at most 2 events per call are matched in the append
    const { res, acceptor } = await setup(300, { fanoutCap: 800 });
    res.store.acceptWith(acceptor);
    const register = (c: string) => res.store.register("acme", spec(`run-${c}`, c)).then((r) => r.wait);
    const two = await Promise.all(["a", "b"].map(register));
    await res.store.ingest("acme", "svc", [ev("e1", "a"), ev("e2", "b")]);
    for (const w of two) expect(await stateOf(res, w.id)).toBe("resolved");
    expect(await acceptMatches(res)).toBe(2);
    const three = await Promise.all(["c", "d", "e"].map(register));
    await res.store.ingest("acme", "svc", [ev("e3", "c"), ev("e4", "d"), ev("e5", "e")]);
    for (const w of three) expect(await stateOf(res, w.id)).toBe("waiting");
    expect(await acceptMatches(res)).toBe(2);
  });
});
