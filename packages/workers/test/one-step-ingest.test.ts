/**
 * Ingest in one step (docs/architecture.md): with the matcher of its process as acceptor
 * on a single Redis, each match-key partition's call claims its events' keys (in their
 * event partitions) and accepts them in one script (ingestEvents); a call that meets a
 * claim of other content writes nothing and its events take the two steps, and a batch
 * that sends an event key twice takes the two steps too. On a cluster every batch takes
 * the two steps (the claims lie in other slots): the same outcomes.
 */
import { createHash } from "node:crypto";
import { DISPATCHER_GROUP, isCluster, luaScripts, MATCHER_GROUP, type Resources } from "@rendezvous/engine";
import { makeResources } from "@rendezvous/testkit";
import type { Command } from "ioredis";
import { describe, expect, it } from "vitest";
import { Matcher } from "../src/index.js";

const sha = (lua: string) => createHash("sha1").update(lua).digest("hex");
const SCRIPTS = new Map([
  [sha(luaScripts.claimAppendEvents.lua), "claimAppendEvents"],
  [sha(luaScripts.ingestEvents.lua), "ingestEvents"],
  [sha(luaScripts.dedupEvents.lua), "dedupEvents"],
  [sha(luaScripts.acceptEvents.lua), "acceptEvents"],
]);

const spec = (runId: string, correlationId: string) => ({
  runId,
  position: "step",
  eventType: "job.done",
  correlationId,
});
const ev = (id: string, correlationId: string, payload: Record<string, unknown> = { id }) => ({
  id,
  type: "job.done",
  correlationId,
  payload,
});

async function setup() {
  const res = makeResources({ partitions: 4 });
  for (const p of res.store.keys.allPartitions()) {
    const pk = res.store.keys.partition(p);
    await res.redis.xgroup("CREATE", pk.stream, MATCHER_GROUP, "0", "MKSTREAM");
    await res.redis.xgroup("CREATE", pk.outbox, DISPATCHER_GROUP, "0", "MKSTREAM");
  }
  const stand = { handoff: { group: DISPATCHER_GROUP, consumer: "stand-in" }, take: async () => undefined };
  res.store.acceptWith(new Matcher(res, { blockMs: 100, dispatcher: stand }).acceptor(stand));
  return { res, oneStep: !isCluster(res.redis) };
}

/** The ingest scripts `work` sends on the store's connection, by name, in order (every node's on a cluster). */
async function scriptsSent(res: Resources, work: () => Promise<unknown>): Promise<string[]> {
  const sent: string[] = [];
  const conns = isCluster(res.redis) ? res.redis.nodes("master") : [res.redis];
  const restore = conns.map((conn) => {
    const original = conn.sendCommand.bind(conn);
    conn.sendCommand = (command: Command, ...rest: unknown[]) => {
      if (command.name === "evalsha" || command.name === "eval") {
        const first = String(command.args[0]);
        const name = SCRIPTS.get(command.name === "eval" ? sha(first) : first);
        if (name) sent.push(name);
      }
      return (original as (c: Command, ...r: unknown[]) => unknown)(command, ...rest);
    };
    return () => {
      conn.sendCommand = original;
    };
  });
  try {
    await work();
  } finally {
    for (const r of restore) r();
  }
  return sent;
}

/** The claim of an event key where dedup keeps it (its event partition), and its expiry member. */
async function claimOf(res: Resources, producer: string, id: string) {
  const keys = res.store.keys;
  const eventKey = keys.eventKey("acme", producer, id);
  const k = keys.partition(keys.eventPartition("acme", producer, id));
  const record = await res.redis.hget(k.events, `d:${eventKey}`);
  const members = await res.redis.zrange(k.expiry, "0", "-1");
  return { record, expires: members.some((m) => m.startsWith("D:") && m.includes(eventKey)) };
}

describe("ingest in one step (ingestEvents)", () => {
  it("claims every event key in its own partition and accepts and matches in the same call", async () => {
    const { res, oneStep } = await setup();
    const { wait } = await res.store.register("acme", spec("run-1", "job-1"));
    // one match key, one call; the event keys lie in several partitions
    const events = Array.from({ length: 12 }, (_, i) => ev(`e${i}`, "job-1"));
    const partitions = new Set(events.map((e) => res.store.keys.eventPartition("acme", "svc", e.id)));
    expect(partitions.size).toBeGreaterThan(1);
    let results: Awaited<ReturnType<Resources["store"]["ingest"]>> = [];
    const sent = await scriptsSent(res, async () => {
      results = await res.store.ingest("acme", "svc", events);
    });
    if (oneStep) expect(sent).toEqual(["ingestEvents"]);
    else expect(sent).toEqual(expect.arrayContaining(["dedupEvents", "acceptEvents"]));
    expect(oneStep || !sent.includes("ingestEvents")).toBe(true);
    expect(results.map((r) => r.status)).toEqual(events.map(() => "accepted"));
    expect((await res.store.getWait("acme", wait.id))?.state).toBe("resolved");
    for (const e of events) {
      const claim = await claimOf(res, "svc", e.id);
      expect(claim.record).toMatch(/\|/);
      expect(claim.expires).toBe(true);
      expect((await res.store.getEvent("acme", "svc", e.id))?.id).toBe(e.id);
    }
    // sent again: duplicates answering the originals, in one call again
    const again = await res.store.ingest("acme", "svc", events.slice(0, 3));
    expect(again.map((r) => r.status)).toEqual(["duplicate", "duplicate", "duplicate"]);
    const first = results[0];
    expect(again[0]?.status === "duplicate" && again[0].event.streamId).toBe(
      first?.status === "accepted" && first.event.streamId,
    );
  });

  it("a call that meets a claim of other content writes nothing: its events take the two steps", async () => {
    const { res, oneStep } = await setup();
    const [original] = await res.store.ingest("acme", "svc", [ev("taken", "job-2", { v: 1 })]);
    const claimBefore = (await claimOf(res, "svc", "taken")).record;
    // same match key: one call holding the conflicting re-send and a new event
    let results: Awaited<ReturnType<Resources["store"]["ingest"]>> = [];
    const sent = await scriptsSent(res, async () => {
      results = await res.store.ingest("acme", "svc", [ev("fresh", "job-2"), ev("taken", "job-2", { v: 2 })]);
    });
    // (one dedup call per event partition of the two)
    if (oneStep)
      expect(sent.filter((n, i) => i === 0 || n !== sent[i - 1])).toEqual([
        "ingestEvents",
        "dedupEvents",
        "acceptEvents",
      ]);
    expect(results[0]?.status).toBe("accepted");
    expect(results[1]?.status).toBe("rejected");
    expect(results[1]?.status === "rejected" && results[1].error.code).toBe("event_id_conflict");
    // the original is untouched, the new event appended once
    expect((await res.store.getEvent("acme", "svc", "taken"))?.streamId).toBe(
      original?.status === "accepted" ? original.event.streamId : "none",
    );
    expect((await claimOf(res, "svc", "taken")).record).toBe(claimBefore);
    expect((await claimOf(res, "svc", "fresh")).expires).toBe(true);
    const k = res.store.keys.partition(res.store.keys.matchPartition("acme", "job.done", "job-2"));
    expect(await res.redis.xlen(k.stream)).toBe(2);
  });

  it("a batch that sends an event key twice takes the two steps: the first is accepted, the second answers it", async () => {
    const { res, oneStep } = await setup();
    let results: Awaited<ReturnType<Resources["store"]["ingest"]>> = [];
    const sent = await scriptsSent(res, async () => {
      results = await res.store.ingest("acme", "svc", [
        ev("twice", "job-3"),
        ev("other", "job-4"),
        ev("twice", "job-3"),
      ]);
    });
    if (oneStep) expect(sent).not.toContain("ingestEvents");
    expect(results.map((r) => r.status)).toEqual(["accepted", "accepted", "duplicate"]);
    expect(results[2]?.status === "duplicate" && results[2].event.streamId).toBe(
      results[0]?.status === "accepted" && results[0].event.streamId,
    );
  });

  it("without a matcher in the process (the split roles' api) the call claims and appends: one call, matched later", async () => {
    const res = makeResources({ partitions: 4 });
    const oneStep = !isCluster(res.redis);
    const { wait } = await res.store.register("acme", spec("run-5", "job-5"));
    let results: Awaited<ReturnType<Resources["store"]["ingest"]>> = [];
    const sent = await scriptsSent(res, async () => {
      results = await res.store.ingest("acme", "svc", [ev("solo", "job-5"), ev("other", "job-5")]);
    });
    if (oneStep) expect(sent).toEqual(["claimAppendEvents"]);
    expect(results.map((r) => r.status)).toEqual(["accepted", "accepted"]);
    for (const id of ["solo", "other"]) expect((await claimOf(res, "svc", id)).expires).toBe(true);
    // appended, not matched: the matcher's to take
    expect((await res.store.getWait("acme", wait.id))?.state).toBe("waiting");
    const again = await res.store.ingest("acme", "svc", [ev("solo", "job-5")]);
    expect(again[0]?.status).toBe("duplicate");
  });
});
