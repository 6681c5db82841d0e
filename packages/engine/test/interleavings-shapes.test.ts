/**
 * Seeded property test of the wait shapes (docs/api.md, Wait shapes): random
 * interleavings of register (plain, any-of with a failure type, count N, both) / ingest
 * (new events, duplicates) / match (in any order, also out of accepted order) / clock /
 * timeout / cancel over two correlation ids and three types, against a real Redis.
 * After EVERY step the waits and events are read back and checked:
 *
 *   1. a wait changes state at most once: once settled, its state and resolution never
 *      change again;
 *   2. every accepted event is readable, `pending` until its match ran, then one of
 *      matched / buffered / late; a matched event is listed by each wait in its
 *      `matchedWaits` (collected or resolving it), and the other way round;
 *   3. a count-wait never resolves with fewer than N distinct events (but by a failure
 *      type): its resolution lists N distinct event keys, or fewer ending with the
 *      failure; each of them of its types and correlation id, accepted at or after its
 *      `since` and at or before its deadline, in accepted order; the resolving event is
 *      among them;
 *   4. a timed-out wait collected fewer than N, and no failure; every collected event
 *      was on time, and every late event of it was accepted after its deadline (the
 *      event-time rule, for each of its match keys);
 *   5. nothing on time is left behind: an event still `buffered` (taken by no wait, late
 *      for none) of a waiting or timed-out shaped wait's match keys was accepted outside
 *      its window (before its since, after its deadline) — else registration or match
 *      should have taken it;
 *   6. a settled wait's history holds exactly one `resolved` entry, and one `collected`
 *      entry per event collected before it settled.
 * At the end every pending event is matched and every due wait timed out, and the
 * checks run once more.
 *
 * Replay: RENDEZVOUS_SEED=<seed>; RENDEZVOUS_RUNS=<n> (default 40).
 */

import type { EventRecord, Wait, WaitSpec } from "@rendezvous/protocol";
import { seedFromEnv } from "@rendezvous/testkit";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { type Harness, makeStore } from "./helpers.js";

const TENANT = "acme";
const TYPES = ["pay.ok", "pay.failed", "pay.held"] as const;
const CORRS = ["c-1", "c-2"] as const;
const PRODUCERS = ["svc", "hook"] as const;
const RUNS = Number(process.env.RENDEZVOUS_RUNS ?? 40);

type Shape = { types: string[]; count: number; failure: string | null };
const SHAPES: Shape[] = [
  { types: ["pay.ok"], count: 1, failure: null },
  { types: ["pay.ok", "pay.failed"], count: 1, failure: "pay.failed" },
  { types: ["pay.ok"], count: 3, failure: null },
  { types: ["pay.ok", "pay.held"], count: 2, failure: null },
  { types: ["pay.ok", "pay.failed", "pay.held"], count: 3, failure: "pay.failed" },
];

type Op =
  | { kind: "register"; shape: number; corr: number; limit: number | null; sinceOffset: number | null }
  | { kind: "ingest"; type: number; corr: number; producer: number; resend: number | null }
  | { kind: "match"; pick: number }
  | { kind: "tick"; ms: number }
  | { kind: "timeout"; wait: number }
  | { kind: "cancel"; wait: number };

const opArb: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant("register" as const),
      shape: fc.nat({ max: SHAPES.length - 1 }),
      corr: fc.nat({ max: CORRS.length - 1 }),
      limit: fc.option(fc.integer({ min: 50, max: 1500 }), { nil: null, freq: 4 }),
      sinceOffset: fc.option(fc.integer({ min: -300, max: 50 }), { nil: null, freq: 2 }),
    }),
  },
  {
    weight: 7,
    arbitrary: fc.record({
      kind: fc.constant("ingest" as const),
      type: fc.constantFrom(0, 0, 0, 1, 2, 2),
      corr: fc.nat({ max: CORRS.length - 1 }),
      producer: fc.nat({ max: PRODUCERS.length - 1 }),
      resend: fc.option(fc.nat({ max: 31 }), { nil: null, freq: 4 }),
    }),
  },
  { weight: 5, arbitrary: fc.record({ kind: fc.constant("match" as const), pick: fc.nat({ max: 31 }) }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant("tick" as const), ms: fc.integer({ min: 0, max: 200 }) }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant("timeout" as const), wait: fc.nat({ max: 31 }) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("cancel" as const), wait: fc.nat({ max: 31 }) }) },
);

interface Sent {
  producer: string;
  id: string;
  type: string;
  corr: string;
  body: { id: string; type: string; correlationId: string; payload: Record<string, unknown> };
}
interface Pending {
  partition: number;
  streamId: string;
  eventKey: string;
}
interface Run {
  waits: Array<{ id: string; shape: Shape; corr: string }>;
  sent: Sent[];
  pending: Pending[];
  /** a settled wait's state and resolution as first seen */
  settled: Map<string, string>;
  nextId: number;
}

const key = (producer: string, id: string) => `${producer}/${id}`;

/** what the runs went through (printed at the end: a property that never reaches a case tests nothing of it) */
const coverage = new Map<string, number>();
const note = (what: string) => coverage.set(what, (coverage.get(what) ?? 0) + 1);

async function runStep(h: Harness, run: Run, op: Op): Promise<void> {
  const { store } = h;
  switch (op.kind) {
    case "register": {
      const shape = SHAPES[op.shape] as Shape;
      const corr = CORRS[op.corr] as string;
      const spec: WaitSpec = {
        runId: `run-${run.waits.length}`,
        position: "p",
        correlationId: corr,
        ...(shape.types.length > 1 ? { eventTypes: shape.types } : { eventType: shape.types[0] as string }),
        ...(shape.count > 1 ? { count: shape.count } : {}),
        ...(shape.failure ? { failureTypes: [shape.failure] } : {}),
        ...(op.limit !== null ? { timeoutMs: op.limit } : {}),
        ...(op.sinceOffset !== null ? { since: new Date(h.clock.now + op.sinceOffset).toISOString() } : {}),
      };
      const { created, wait } = await store.register(TENANT, spec);
      expect(created).toBe(true);
      run.waits.push({ id: wait.id, shape, corr });
      return;
    }
    case "ingest": {
      const earlier = op.resend === null || run.sent.length === 0 ? null : run.sent[op.resend % run.sent.length];
      const sent: Sent = earlier ?? {
        producer: PRODUCERS[op.producer] as string,
        id: `e${run.nextId++}`,
        type: TYPES[op.type] as string,
        corr: CORRS[op.corr] as string,
        body: { id: "", type: "", correlationId: "", payload: {} },
      };
      if (!earlier) sent.body = { id: sent.id, type: sent.type, correlationId: sent.corr, payload: { id: sent.id } };
      const [r] = await store.ingest(TENANT, sent.producer, [sent.body]);
      expect(r?.status).toBe(earlier ? "duplicate" : "accepted");
      if (!earlier && r?.status === "accepted") {
        run.sent.push(sent);
        run.pending.push({
          partition: store.keys.matchPartition(TENANT, sent.type, sent.corr),
          streamId: r.event.streamId,
          eventKey: store.keys.eventKey(TENANT, sent.producer, sent.id),
        });
      }
      return;
    }
    case "match": {
      if (run.pending.length === 0) return;
      // any pending event, not only the oldest: matchers may run out of accepted order
      const [p] = run.pending.splice(op.pick % run.pending.length, 1) as [Pending];
      await store.match(p.partition, [{ streamId: p.streamId, eventKey: p.eventKey }]);
      return;
    }
    case "tick":
      h.tick(op.ms);
      return;
    case "timeout":
    case "cancel": {
      if (run.waits.length === 0) return;
      const w = run.waits[op.wait % run.waits.length] as Run["waits"][number];
      if (op.kind === "timeout") {
        const t = await store.timeout(w.id);
        note(`timeout ${t.outcome}`);
        if (t.outcome === "timed_out" && (t.wait.collected?.length ?? 0) > 0) note("timed out with events collected");
      } else await store.cancel(TENANT, w.id).catch(() => undefined);
      return;
    }
  }
}

async function check(h: Harness, run: Run): Promise<void> {
  const { store } = h;
  const waits = (await Promise.all(run.waits.map((w) => store.getWait(TENANT, w.id)))) as Wait[];
  const events = (await Promise.all(run.sent.map((s) => store.getEvent(TENANT, s.producer, s.id)))) as EventRecord[];
  const byKey = new Map(events.map((e) => [key(e.producer, e.id), e]));
  const pendingKeys = new Set(run.pending.map((p) => p.eventKey));
  // 2. events
  for (const [i, e] of events.entries()) {
    const s = run.sent[i] as Sent;
    expect(e, `event ${s.id} readable`).not.toBeNull();
    const isPending = pendingKeys.has(store.keys.eventKey(TENANT, s.producer, s.id));
    if (isPending) expect(e.status, `${s.id} pending`).toBe("pending");
    else expect(["matched", "buffered", "late"], `${s.id}: ${e.status}`).toContain(e.status);
  }
  for (const [i, wait] of waits.entries()) {
    const { shape, corr } = run.waits[i] as Run["waits"][number];
    expect(wait, "wait readable").not.toBeNull();
    const r = wait.resolution;
    // 1. settles once
    if (wait.state !== "waiting") {
      const seen = JSON.stringify({ state: wait.state, r });
      const first = run.settled.get(wait.id);
      if (first === undefined) {
        run.settled.set(wait.id, seen);
        const got = r?.kind === "event" ? (r.events?.length ?? 1) : (wait.collected?.length ?? 0);
        note(
          `${wait.state} (${shape.types.length} types, count ${shape.count}) with ${got}${r?.outcome ? ` ${r.outcome}` : ""}`,
        );
      } else expect(seen, `${wait.id} changed after settling`).toBe(first);
    }
    const since = wait.since ? Date.parse(wait.since) : 0;
    const deadline = wait.deadline ? Date.parse(wait.deadline) : Number.POSITIVE_INFINITY;
    const onTime = (at: string) => Date.parse(at) >= since && Date.parse(at) <= deadline;
    const shaped = shape.types.length > 1 || shape.count > 1 || shape.failure !== null;
    const taken = shaped
      ? r?.kind === "event"
        ? (r.events ?? [])
        : (wait.collected ?? [])
      : r?.kind === "event" && r.event
        ? [{ ...r.event, type: shape.types[0] as string }]
        : [];
    // 2. wait ↔ event consistency
    for (const t of taken) {
      const e = byKey.get(key(t.producer, t.id));
      expect(e?.matchedWaits, `${t.id} lists ${wait.id}`).toContain(wait.id);
      expect(e?.correlationId).toBe(corr);
      expect(shape.types).toContain(e?.type);
      expect(t.type).toBe(e?.type);
      expect(onTime(t.acceptedAt), `${t.id} on time for ${wait.id}`).toBe(true);
    }
    const distinct = new Set(taken.map((t) => key(t.producer, t.id)));
    expect(distinct.size, "distinct events").toBe(taken.length);
    const order = taken.map((t) => t.streamId);
    const sorted = [...order].sort((a, b) => {
      const [am, as] = a.split("-").map(Number) as [number, number];
      const [bm, bs] = b.split("-").map(Number) as [number, number];
      return am - bm || as - bs;
    });
    expect(order, "accepted order").toEqual(sorted);
    // 3. resolved: N distinct, or a failure
    if (wait.state === "resolved" && r?.kind === "event") {
      const failed = shape.failure !== null && r.event !== undefined && r.outcome === "failure";
      if (failed)
        expect(taken.at(-1)?.type === shape.failure || taken.some((t) => t.type === shape.failure)).toBe(true);
      else expect(taken.length, `${wait.id} resolved with ${taken.length} of ${shape.count}`).toBe(shape.count);
      expect(taken.some((t) => t.id === r.event?.id && t.producer === r.event?.producer)).toBe(true);
      if (shape.failure !== null) expect(r.outcome).toBe(failed ? "failure" : "success");
    }
    // 4. timed out: fewer than N, no failure among them, and no on-time event late for it (the event-time rule)
    if (wait.state === "timed_out") {
      expect(taken.length).toBeLessThan(shape.count);
      expect(taken.some((t) => t.type === shape.failure)).toBe(false);
      for (const late of wait.lateEvents) {
        expect(Date.parse(late.acceptedAt), `${late.id} on time but late for ${wait.id}`).toBeGreaterThan(deadline);
      }
    }
    // 5. nothing on time left buffered for a waiting or timed-out shaped wait
    if (shaped && (wait.state === "waiting" || wait.state === "timed_out")) {
      for (const e of events) {
        if (e.status !== "buffered" || e.correlationId !== corr || !shape.types.includes(e.type)) continue;
        expect(onTime(e.acceptedAt), `${e.id} buffered while ${wait.id} (${wait.state}) could take it`).toBe(false);
      }
    }
    // 6. history
    const resolvedEntries = wait.history.filter((x) => x.what === "resolved").length;
    expect(resolvedEntries).toBe(wait.state === "waiting" ? 0 : 1);
    if (shaped && wait.state === "waiting") {
      expect(wait.history.filter((x) => x.what === "collected").length).toBeLessThanOrEqual(taken.length);
    }
  }
  // 2. (the other way) every wait an event names took it
  for (const e of events) {
    for (const id of e.matchedWaits) {
      const i = run.waits.findIndex((w) => w.id === id);
      const wait = waits[i] as Wait;
      const r = wait.resolution;
      const listed = [...(r?.events ?? []), ...(wait.collected ?? []), ...(r?.event ? [r.event] : [])];
      expect(
        listed.some((t) => t.id === e.id && t.producer === e.producer),
        `${e.id} names ${id}`,
      ).toBe(true);
    }
  }
}

describe("interleavings of the wait shapes", () => {
  it("keeps the shapes' invariants after every step of random interleavings", {
    timeout: Math.max(120_000, RUNS * 2000),
  }, async () => {
    const seed = seedFromEnv("interleavings-shapes");
    let steps = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(opArb, { minLength: 1, maxLength: 70, size: "max" }), async (ops) => {
        const h = makeStore({ partitions: 2 });
        const run: Run = { waits: [], sent: [], pending: [], settled: new Map(), nextId: 1 };
        const log: string[] = [];
        try {
          for (const op of ops) {
            log.push(JSON.stringify(op));
            await runStep(h, run, op);
            await check(h, run);
            steps++;
          }
          // drain: every event matched, every due wait timed out
          while (run.pending.length > 0) await runStep(h, run, { kind: "match", pick: 0 });
          h.tick(2000);
          for (const w of run.waits) await h.store.timeout(w.id);
          await check(h, run);
          const waits = await Promise.all(run.waits.map((w) => h.store.getWait(TENANT, w.id)));
          for (const w of waits) if (w?.deadline) expect(w.state).not.toBe("waiting");
        } catch (e) {
          if (e instanceof Error) e.message += `\n--- steps ---\n${log.join("\n")}`;
          throw e;
        } finally {
          await h.redis.quit();
        }
      }),
      { seed, numRuns: RUNS },
    );
    const covered = [...coverage].sort(([a], [b]) => a.localeCompare(b)).map(([k, n]) => `  ${k}: ${n}`);
    console.log(`interleavings-shapes: ${RUNS} runs, ${steps} steps\n${covered.join("\n")}`);
  });
});
