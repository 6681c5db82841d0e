import type { Resources } from "@rendezvous/engine";
import { eventually, makeResources } from "@rendezvous/testkit";
import { describe, expect, it } from "vitest";
import { type FireResult, lateness, Scheduler, type SchedulerOptions } from "../src/index.js";

const WAITS = 2000;
const STEP = 50;

/**
 * A Scheduler that keeps what each fireDue run did (the bucket worker and the scheduler's
 * own wake-up call fireDue; a call made while a run goes joins it and gets its result, the
 * same object: kept once).
 */
class Observed extends Scheduler {
  readonly runs: FireResult[] = [];
  override async fireDue(): Promise<FireResult> {
    const r = await super.fireDue();
    if (!this.runs.includes(r)) this.runs.push(r);
    return r;
  }
}

/** Registers `n` waits of one tenant that all share `deadline`; their ids. */
async function registerSharing(res: Resources, n: number, deadline: string): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < n; i += 200) {
    const page = await Promise.all(
      Array.from({ length: Math.min(200, n - i) }, (_, j) =>
        res.store.register("acme", {
          runId: `run-${i + j}`,
          position: "step",
          eventType: "job.done",
          correlationId: `job-${i + j}`,
          deadline,
        }),
      ),
    );
    ids.push(...page.map((r) => r.wait.id));
  }
  return ids;
}

/** Outbox entries (wait id → how many) over every partition. */
async function outboxCounts(res: Resources): Promise<Map<string, number>> {
  const counts = new Map<string, number>();
  for (const p of res.store.keys.allPartitions()) {
    for (const [, fields] of await res.redis.xrange(res.store.keys.partition(p).outbox, "-", "+")) {
      const w = fields[fields.indexOf("w") + 1] as string;
      counts.set(w, (counts.get(w) ?? 0) + 1);
    }
  }
  return counts;
}

async function timeoutLateness(res: Resources): Promise<{ sum: number; count: number }> {
  const values = (await res.metrics.timeoutLateness.get()).values;
  // summed over label sets (a tenant label, say)
  const total = (suffix: string) =>
    values.filter((v) => v.metricName?.endsWith(suffix)).reduce((n, v) => n + v.value, 0);
  return { sum: total("_sum"), count: total("_count") };
}

describe("timeouts sharing one deadline", () => {
  it(`${WAITS} waits time out exactly once, in steps of at most ${STEP}, while the sweeper runs beside them`, async () => {
    const res = makeResources();
    // the sweeper runs every 100 ms but takes a wait only 2 s past its deadline: on a loaded machine
    // the burst's own job may start late, and must still be the one that fires every wait
    const opts: SchedulerOptions = { step: STEP, sweepIntervalMs: 100, graceMs: 2000 };
    // two schedulers on one Redis, as two processes would be
    const a = new Observed(res, opts);
    const b = new Observed(res, opts);
    // far enough ahead that registering the waits (seconds on a loaded machine) ends before it
    const deadline = Date.now() + 6000;
    const ids = await registerSharing(res, WAITS, new Date(deadline).toISOString());
    expect(Date.now()).toBeLessThan(deadline);
    await a.start();
    await b.start();
    // the API's connection stays usable while the burst fires: PINGs on it are answered throughout
    let pings = 0;
    let probing = true;
    const probe = (async () => {
      while (probing) {
        await res.redis.ping();
        pings++;
      }
    })();
    try {
      await a.schedule([{ deadline }]);
      for (const p of res.store.keys.allPartitions()) {
        await eventually(async () => (await res.redis.zcard(res.store.keys.partition(p).deadlines)) === 0, 20_000);
      }
      const pingsDuringBurst = pings;
      // the run that fired the last waits ends after one more read (its runs are recorded when they end)
      await eventually(() => !a.firing && !b.firing, 5000);
      const runs = [...a.runs, ...b.runs];
      const timedOut = runs.reduce((n, r) => n + r.timedOut, 0);
      expect(timedOut).toBe(WAITS);
      expect(Math.max(...runs.map((r) => r.largestStep))).toBeLessThanOrEqual(STEP);
      expect(runs.reduce((n, r) => n + r.steps, 0)).toBeGreaterThanOrEqual(WAITS / STEP);
      expect(pingsDuringBurst).toBeGreaterThan(WAITS / STEP);
      // exactly once: one resolution on each timeline, one outbox entry per wait
      const outbox = await outboxCounts(res);
      expect(outbox.size).toBe(WAITS);
      expect([...outbox.values()].every((n) => n === 1)).toBe(true);
      const sample = ids.filter((_, i) => i % 97 === 0);
      for (const id of sample) {
        const w = await res.store.getWait("acme", id);
        expect(w?.state).toBe("timed_out");
        // a long burst is not taken for waits whose job went missing
        expect(w?.history.map((h) => h.what)).toEqual(["registered", "resolved"]);
      }
      const all = await res.store.getWaits(ids);
      expect(all.filter((w) => w?.state === "timed_out")).toHaveLength(WAITS);
      const sweeperMarked = all.filter((w) => w?.history.some((h) => h.what === "sweeper_rescheduled"));
      expect(sweeperMarked).toHaveLength(0);
    } finally {
      probing = false;
      await probe;
      await a.stop();
      await b.stop();
    }
  }, 60_000);

  it("concurrent fireDue calls in one process join one run instead of firing the same waits again", async () => {
    const res = makeResources();
    const scheduler = new Scheduler(res, { step: 100 });
    const deadline = Date.now() + 200;
    await registerSharing(res, 500, new Date(deadline).toISOString());
    await new Promise((r) => setTimeout(r, deadline - Date.now() + 20));
    const [first, second, third] = await Promise.all([scheduler.fireDue(), scheduler.fireDue(), scheduler.fireDue()]);
    expect(first.timedOut).toBe(500);
    expect(second).toBe(first);
    expect(third).toBe(first);
    // the joined callers asked for one more pass: nothing was due any more
    expect(first.steps).toBe(5);
    expect((await scheduler.fireDue()).timedOut).toBe(0);
    await scheduler.stop();
  });
});

describe("timeout lateness", () => {
  it("a deadline already past at registration times out at once and adds no decades to the lateness metric", async () => {
    const res = makeResources();
    const scheduler = new Scheduler(res);
    const { wait } = await res.store.register("acme", {
      runId: "run-1970",
      position: "step",
      eventType: "job.done",
      correlationId: "job-1970",
      deadline: "1970-01-01T00:00:00.000Z",
    });
    expect(wait.state).toBe("waiting");
    const before = await timeoutLateness(res);
    const r = await scheduler.fireDue();
    expect(r.timedOut).toBe(1);
    const after = await timeoutLateness(res);
    expect(after.count - before.count).toBe(1);
    expect(after.sum - before.sum).toBeGreaterThanOrEqual(0);
    expect(after.sum - before.sum).toBeLessThan(60);
    const w = await res.store.getWait("acme", wait.id);
    expect(w?.state).toBe("timed_out");
    expect(w?.resolution?.kind).toBe("timeout");
    await scheduler.stop();
  });

  it("is measured from the later of the deadline and the registration", () => {
    const wait = {
      createdAt: "2026-12-01T10:00:00.000Z",
      deadline: "2026-12-01T10:00:05.000Z",
    } as Parameters<typeof lateness>[0];
    const at = Date.parse("2026-12-01T10:00:05.250Z");
    expect(lateness(wait, at)).toBeCloseTo(0.25, 6);
    expect(lateness({ ...wait, deadline: "1970-01-01T00:00:00.000Z" }, at)).toBeCloseTo(5.25, 6);
    expect(lateness({ ...wait, deadline: null }, at)).toBeUndefined();
    // fired before the deadline by the clock of this process: never negative
    expect(lateness(wait, Date.parse("2026-12-01T10:00:04.990Z"))).toBe(0);
  });
});
