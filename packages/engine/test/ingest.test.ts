import { isRendezvousError } from "@rendezvous/protocol";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { canonicalJson, digest } from "../src/index.js";
import { event, ingestOne, makeStore, matchOne } from "./helpers.js";

describe("ingest: dedup and append", () => {
  it("accepts an event once; the same content again is a duplicate with the original", async () => {
    const h = makeStore();
    const first = await ingestOne(h, event("e1", "job-1"));
    expect(first.result).toMatchObject({ status: "accepted", event: { id: "e1", status: "pending", tenant: "acme" } });
    h.tick(10);
    const [again] = await h.store.ingest("acme", "svc", [event("e1", "job-1")]);
    expect(again).toMatchObject({
      status: "duplicate",
      event: { id: "e1", streamId: first.streamId, acceptedAt: first.result.event.acceptedAt },
    });
    expect(await h.redis.xlen(h.store.keys.partition(first.partition).stream)).toBe(1);
  });

  it("multi-byte ids, correlation ids and payloads pack byte-exact: accepted, then duplicates of themselves", async () => {
    const h = makeStore();
    const units = ["é", "日本", "🙂", "ß:", "a"];
    const events = Array.from({ length: 40 }, (_, i) => {
      const u = units[i % units.length] as string;
      return event(`${u.repeat(1 + ((i * 37) % 100))}-${i}`, `job-${u.repeat(i % 7)}`, {
        payload: { text: u.repeat(i * 11), n: i },
      });
    });
    const first = await h.store.ingest("acme", "svc", events);
    expect(first.map((r) => r.status)).toEqual(events.map(() => "accepted"));
    const again = await h.store.ingest("acme", "svc", events);
    expect(again.map((r) => r.status)).toEqual(events.map(() => "duplicate"));
    again.forEach((r, i) => {
      const e = events[i];
      if (r.status !== "duplicate" || !e) throw new Error("expected a duplicate");
      expect(r.event).toMatchObject({ id: e.id, correlationId: e.correlationId });
    });
    const changed = await h.store.ingest("acme", "svc", [
      { ...(events[3] as (typeof events)[number]), payload: { text: "🙃" } },
    ]);
    expect(changed[0]?.status).toBe("rejected");
  });

  it("an event record holds tenant, type and correlation id once (in its match key); records of earlier versions still read", async () => {
    const h = makeStore();
    const first = await ingestOne(h, event("slim", "job-slim"));
    const events = h.store.keys.partition(first.partition).events;
    const raw = JSON.parse(String(await h.redis.hget(events, `e:${first.eventKey}`)));
    expect(raw).not.toHaveProperty("t");
    expect(raw).not.toHaveProperty("ty");
    expect(raw).not.toHaveProperty("c");
    expect(await h.store.getEvent("acme", "svc", "slim")).toMatchObject({
      tenant: "acme",
      type: "job.done",
      correlationId: "job-slim",
    });
    // an earlier version's record, with t / ty / c, answers the same way
    await h.redis.hset(
      events,
      `e:${first.eventKey}`,
      JSON.stringify({ ...raw, t: "acme", ty: "job.done", c: "job-slim" }),
    );
    const old = await h.store.getEvent("acme", "svc", "slim");
    expect(old).toMatchObject({ tenant: "acme", type: "job.done", correlationId: "job-slim", id: "slim" });
    // and matching still works on either form
    expect((await matchOne(h, first)).status).toBe("buffered");
  });

  it("an event record carries its match key's index keys; a record without them (earlier versions) matches the same", async () => {
    const h = makeStore({ partitions: 1 });
    const waitFor = async (runId: string, correlationId: string) =>
      (await h.store.register("acme", { runId, position: "p", eventType: "job.done", correlationId })).wait;
    const k = h.store.keys.partition(0);
    for (const [n, keepIk] of [
      [1, true],
      [2, false],
    ] as const) {
      const corr = `job-ik-${n}`;
      const ik = h.store.keys.indexKey("acme", "job.done", corr);
      expect(ik).toHaveLength("4:acme".length + 8);
      expect(ik.startsWith("4:acme")).toBe(true);
      const wait = await waitFor(`run-${n}`, corr);
      const late = await waitFor(`run-late-${n}`, corr);
      await h.store.cancel("acme", late.id);
      const ingested = await ingestOne(h, event(`ik-${n}`, corr));
      const raw = JSON.parse(String(await h.redis.hget(k.events, `e:${ingested.eventKey}`)));
      expect(raw.ix).toBe(ik);
      expect(raw.ik).toBe(h.store.keys.legacyIndexKey("acme", ik));
      expect(raw.ik).toHaveLength(12);
      if (!keepIk) {
        delete raw.ix;
        delete raw.ik;
        await h.redis.hset(k.events, `e:${ingested.eventKey}`, JSON.stringify(raw));
      }
      expect(await matchOne(h, ingested)).toMatchObject({ status: "matched", matched: [wait.id], late: [late.id] });
      expect(await h.redis.zrangebylex(k.waiting, `[${ik}`, `(${ik}\xff`)).toEqual([]);
      const done = await h.redis.zrangebylex(k.done, `[${ik}`, `(${ik}\xff`);
      expect(done.sort()).toEqual([wait.id, late.id].map((id) => ik + id.slice(id.indexOf(".") + 1)).sort());
      expect((await h.store.getWait("acme", wait.id))?.state).toBe("resolved");
    }
  });

  it("the same event id with other content is a conflict, whatever the type or correlation id", async () => {
    const h = makeStore();
    await ingestOne(h, event("e1", "job-1"));
    for (const other of [
      event("e1", "job-1", { payload: { n: "changed" } }),
      event("e1", "job-2"),
      event("e1", "job-1", { type: "job.failed" }),
    ]) {
      const [r] = await h.store.ingest("acme", "svc", [other]);
      expect(r?.status).toBe("rejected");
      if (r?.status === "rejected") expect(isRendezvousError(r.error, "event_id_conflict")).toBe(true);
    }
    // nothing of the conflicting sends was stored
    for (const p of h.store.keys.allPartitions()) {
      const len = await h.redis.xlen(h.store.keys.partition(p).stream);
      expect(len).toBe(p === h.store.keys.matchPartition("acme", "job.done", "job-1") ? 1 : 0);
    }
  });

  it("the dedup hash is the RFC 8785 canonical JSON of the content; the stored payload is its canonical text", async () => {
    const h = makeStore();
    let n = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.dictionary(fc.string(), fc.jsonValue({ maxDepth: 3 }), { maxKeys: 6 }),
        fc.option(fc.constant("2026-11-29T13:34:41.123Z"), { nil: undefined }),
        async (payload, occurredAt) => {
          const e = event(`p${n++}`, "job-1", { payload, ...(occurredAt ? { occurredAt } : {}) });
          const [r] = await h.store.ingest("acme", "svc", [e]);
          expect(r?.status).toBe("accepted");
          const ek = h.store.keys.eventKey("acme", "svc", e.id);
          const ep = h.store.keys.partition(h.store.keys.eventPartition("acme", "svc", e.id));
          const content = {
            type: e.type,
            correlationId: e.correlationId,
            occurredAt: e.occurredAt,
            payload: e.payload,
          };
          const claim = String(await h.redis.hget(ep.events, `d:${ek}`));
          expect(claim.split("|")[0]).toBe(digest(canonicalJson(content), 22));
          const mp = h.store.keys.partition(h.store.keys.matchPartition("acme", e.type, e.correlationId));
          const record = JSON.parse(String(await h.redis.hget(mp.events, `e:${ek}`)));
          expect(record.pl).toBe(canonicalJson(payload));
          expect(JSON.parse(record.pl)).toEqual(JSON.parse(JSON.stringify(payload)));
        },
      ),
      { numRuns: 60, seed: 7 },
    );
  });

  it("dedup is per producer and per tenant", async () => {
    const h = makeStore();
    await ingestOne(h, event("e1", "job-1"), "acme", "svc");
    const other = await ingestOne(h, event("e1", "job-1"), "acme", "billing");
    expect(other.result.status).toBe("accepted");
    const otherTenant = await ingestOne(h, event("e1", "job-1"), "globex", "svc");
    expect(otherTenant.result.status).toBe("accepted");
  });

  it("payload key order does not make a different content", async () => {
    const h = makeStore();
    await ingestOne(h, event("e1", "job-1", { payload: { a: 1, b: { c: 2, d: [1, 2] } } }));
    const [r] = await h.store.ingest("acme", "svc", [
      event("e1", "job-1", { payload: { b: { d: [1, 2], c: 2 }, a: 1 } }),
    ]);
    expect(r?.status).toBe("duplicate");
  });

  it("a crash after dedup but before the append loses nothing: the retry appends once", async () => {
    const h = makeStore();
    const e = event("e1", "job-1");
    const ek = h.store.keys.eventKey("acme", "svc", "e1");
    const ep = h.store.keys.partition(h.store.keys.eventPartition("acme", "svc", "e1"));
    const mp = h.store.keys.matchPartition("acme", e.type, e.correlationId);
    // a claim with other content (another hash): the guard holds, nothing is appended
    await h.redis.hset(ep.events, `d:${ek}`, `xxxxxxxxxxxxxxxxxxxxxx|${mp}`);
    const [conflict] = await h.store.ingest("acme", "svc", [e]);
    expect(conflict?.status).toBe("rejected");
    expect(await h.redis.xlen(h.store.keys.partition(mp).stream)).toBe(0);
    await h.redis.hdel(ep.events, `d:${ek}`);

    // the first step alone: run a real ingest, then take the append back out, as if
    // the process had died between the two steps
    const [first] = await h.store.ingest("acme", "svc", [e]);
    expect(first?.status).toBe("accepted");
    const claim = await h.redis.hget(ep.events, `d:${ek}`);
    expect(claim).toMatch(new RegExp(`^[A-Za-z0-9_-]{22}\\|${mp}$`));
    const mpk = h.store.keys.partition(mp);
    await h.redis.del(mpk.stream);
    await h.redis.hdel(mpk.events, `e:${ek}`);
    const [retry] = await h.store.ingest("acme", "svc", [e]);
    expect(retry?.status).toBe("accepted");
    expect(await h.redis.xlen(mpk.stream)).toBe(1);
    const [dup] = await h.store.ingest("acme", "svc", [e]);
    expect(dup).toMatchObject({
      status: "duplicate",
      event: { streamId: retry?.status === "accepted" ? retry.event.streamId : "" },
    });
    expect(await h.redis.xlen(mpk.stream)).toBe(1);
  });

  it("reads a dedup record written as JSON by an earlier version", async () => {
    const h = makeStore();
    const e = event("e1", "job-1");
    const [first] = await h.store.ingest("acme", "svc", [e]);
    const ek = h.store.keys.eventKey("acme", "svc", "e1");
    const ep = h.store.keys.partition(h.store.keys.eventPartition("acme", "svc", "e1"));
    const [hash, mp] = String(await h.redis.hget(ep.events, `d:${ek}`)).split("|");
    await h.redis.hset(
      ep.events,
      `d:${ek}`,
      JSON.stringify({ ty: e.type, c: e.correlationId, mp: Number(mp), h: hash, s: "a" }),
    );
    const [again] = await h.store.ingest("acme", "svc", [e]);
    expect(again).toMatchObject({
      status: "duplicate",
      event: { streamId: first?.status === "accepted" ? first.event.streamId : "" },
    });
    const [other] = await h.store.ingest("acme", "svc", [event("e1", "job-2")]);
    expect(other?.status).toBe("rejected");
    expect(await h.store.getEvent("acme", "svc", "e1")).toMatchObject({ id: "e1", correlationId: "job-1" });
  });

  it("a batch answers in order; a repeated id inside it is a duplicate of the first", async () => {
    const h = makeStore();
    await ingestOne(h, event("old", "job-0"));
    const results = await h.store.ingest("acme", "svc", [
      event("a", "job-1"),
      event("old", "job-0"),
      event("b", "job-2"),
      event("a", "job-1"),
      event("b", "job-9"),
    ]);
    expect(results.map((r) => r.status)).toEqual(["accepted", "duplicate", "accepted", "duplicate", "rejected"]);
    const a = results[0];
    const a2 = results[3];
    if (a?.status === "accepted" && a2?.status === "duplicate") expect(a2.event.streamId).toBe(a.event.streamId);
  });

  it("getEvent shows status, matched waits and late waits", async () => {
    const h = makeStore();
    expect(await h.store.getEvent("acme", "svc", "nope")).toBeNull();
    const { wait } = await h.store.register("acme", {
      runId: "r1",
      position: "p",
      eventType: "job.done",
      correlationId: "job-1",
    });
    const ev = await ingestOne(h, event("e1", "job-1", { occurredAt: "2026-01-01T00:00:00.000Z" }));
    expect(await h.store.getEvent("acme", "svc", "e1")).toMatchObject({ status: "pending", matchedWaits: [] });
    await matchOne(h, ev);
    expect(await h.store.getEvent("acme", "svc", "e1")).toMatchObject({
      id: "e1",
      tenant: "acme",
      producer: "svc",
      type: "job.done",
      correlationId: "job-1",
      occurredAt: "2026-01-01T00:00:00.000Z",
      streamId: ev.streamId,
      status: "matched",
      matchedWaits: [wait.id],
      lateFor: [],
    });
    expect(await h.store.getEvent("globex", "svc", "e1")).toBeNull();
  });
});

describe("duplicates on the timeline", () => {
  it("a re-sent event is recorded once as duplicate_ignored on the wait it resolved", async () => {
    const h = makeStore();
    const { wait } = await h.store.register("acme", {
      runId: "r",
      position: "p",
      eventType: "job.done",
      correlationId: "j1",
    });
    const ev = await ingestOne(h, event("e1", "j1"));
    await matchOne(h, ev);
    for (let i = 0; i < 3; i++) {
      const [again] = await h.store.ingest("acme", "svc", [event("e1", "j1")]);
      expect(again?.status).toBe("duplicate");
    }
    const w = await h.store.getWait("acme", wait.id);
    const dups = w?.history.filter((x) => x.what === "duplicate_ignored") ?? [];
    expect(dups).toHaveLength(1);
    expect(dups[0]).toMatchObject({ event: { producer: "svc", id: "e1", streamId: ev.streamId } });
  });
});
