/**
 * Retention: removes what has outlived its time (settled waits, buffered events, event
 * and dedup records, refusals) in the given partitions, in bounded steps: one partition's
 * call of at most EXPIRE_BATCH expiry entries per step, each step followed by a rest as long
 * as it took, at most EXPIRE_ROUNDS rounds over the partitions, a partition leaving the
 * rounds once it has nothing more to remove, no step started after the run's time budget
 * (UPKEEP_BUDGET_MS). The Scheduler runs it at the end of each sweep; what one run leaves,
 * the next takes. It sets the tenants' quota counts right too (QuotaRecount), in rounds, and
 * compacts completed continuation jobs (Compaction).
 */
import { type CountDrift, compactContinuations, Pacer, type RedisLike, type Store } from "@rendezvous/engine";

/**
 * Expiry entries per call, and rounds per run (2,000 entries per partition). A call holds
 * Redis while it runs (an entry of a single-event ingest or a settled wait ~8 µs on a fast
 * VM) and calls pipelined run back to back: a step is one partition's call, so the resolve
 * path waits for at most ~100 entries' work (16 pipelined calls of 500 would hold Redis for
 * 130–270 ms with a backlog on this VM). The small steps cost ~2.5 % more Redis instructions
 * than such rounds (`npm run bench:redis-instructions -- --only expire --ingest-batch 1`:
 * 275,941 per resolved event against 269,131), their run-position forgets going in more calls.
 */
const EXPIRE_BATCH = 100;
const EXPIRE_ROUNDS = 20;

/**
 * The wall time after which a run of the sweep's upkeep (retention; then, with a budget of
 * its own, compaction) starts no further step, ms: with the rests, a backlog does not hold
 * the sweep (and the timeouts' scheduling of the next one) for long.
 */
export const UPKEEP_BUDGET_MS = 250;

/**
 * One retention run over `partitions`; how many records it removed. `pacer` rests after each
 * step as long as it took (the caller's own, so nothing else waits for it); `until`: the
 * performance.now() after which no step starts.
 */
export async function expireOutlived(
  store: Store,
  partitions: readonly number[],
  pacer: Pacer = new Pacer(1),
  until = Number.POSITIVE_INFINITY,
): Promise<number> {
  let open = [...partitions];
  let expired = 0;
  for (let round = 0; round < EXPIRE_ROUNDS && open.length > 0; round++) {
    const more: number[] = [];
    for (const partition of open) {
      if (performance.now() >= until) return expired;
      const [r] = await pacer.run(true, () => store.expireMany([partition], EXPIRE_BATCH));
      expired += r?.handled ?? 0;
      if (r?.more) more.push(partition);
    }
    open = more;
  }
  return expired;
}

/**
 * Retention as the Scheduler runs it at the end of each sweep: expireOutlived with a pacer of
 * its own, so only the retention rests after its steps (the dispatcher never waits for it).
 */
export class Retention {
  readonly #pacer = new Pacer(1);

  /** One run over `partitions`; how many records it removed. `until`: as expireOutlived's. */
  run(store: Store, partitions: readonly number[], until = Number.POSITIVE_INFINITY): Promise<number> {
    return expireOutlived(store, partitions, this.#pacer, until);
  }
}

/** Tenants recounted per step (one step per sweep, so per second by default). */
export const RECOUNT_PER_STEP = 200;

/**
 * The quota counts (engine/src/quotas.ts) are updated beside the transitions; this sets
 * them right from the wait indexes and the inbox, a round over the tenants with a count
 * quota at most every `recountMs`, RECOUNT_PER_STEP tenants per step. The tenants are the
 * registry's (the scheduler passes `config.tenants`, which the registry view replaces),
 * and which of them have a count quota is asked at each step, so a quota set through the
 * admin API is covered from the next round.
 *
 * A counter found off is not set at once: the difference may be a transition that has
 * committed while its count update is still in flight (setting the count then would count
 * that transition twice once the update lands). It is looked at again at the next step
 * (the next sweep) and adjusted by the difference only when that look finds the same one:
 * a count left off by a crash or a failed update stays off by the same amount, an update
 * in flight has landed by then. A counter kept no longer is removed at once.
 */
export class QuotaRecount {
  #cursor = 0;
  #roundStarted = Number.NEGATIVE_INFINITY;
  /** tenants whose counters the last look found off, and by how much */
  #suspects = new Map<string, CountDrift["off"]>();

  /**
   * One step: looks at the next tenants of the round when one is due, and again at those
   * the last step found off; how many of the round it looked at.
   */
  async step(store: Store, tenants: readonly string[], recountMs: number, now = Date.now()): Promise<number> {
    const counted = store.quotas.counted(tenants);
    let slice: string[] = [];
    if (counted.length > 0 && (this.#cursor > 0 || now - this.#roundStarted >= recountMs)) {
      if (this.#cursor === 0) this.#roundStarted = now;
      slice = counted.slice(this.#cursor, this.#cursor + RECOUNT_PER_STEP);
      this.#cursor += slice.length;
      if (this.#cursor >= counted.length) this.#cursor = 0;
    }
    const keep = new Set(counted);
    const inSlice = new Set(slice);
    const again = [...this.#suspects.keys()].filter((t) => keep.has(t) && !inSlice.has(t));
    if (slice.length + again.length === 0) {
      this.#suspects.clear();
      return 0;
    }
    const drifts = await store.quotas.drift([...slice, ...again]);
    const fixes = new Map<string, CountDrift>();
    const suspects = new Map<string, CountDrift["off"]>();
    for (const [tenant, d] of drifts) {
      const seen = this.#suspects.get(tenant);
      const confirmed = seen !== undefined && sameOff(seen, d.off);
      if (!confirmed && Object.keys(d.off).length > 0) suspects.set(tenant, d.off);
      if (confirmed || d.stray.length > 0) fixes.set(tenant, { off: confirmed ? d.off : {}, stray: d.stray });
    }
    this.#suspects = suspects;
    await store.quotas.adjust(fixes);
    return slice.length;
  }
}

function sameOff(a: CountDrift["off"], b: CountDrift["off"]): boolean {
  return a.w === b.w && a.b === b.b;
}

/**
 * Completed continuation jobs examined per queue per call, and calls per run. A call holds
 * Redis while it runs (some 100k instructions per job in calls of 10, `npm run
 * bench:redis-instructions -- --only compact --compact-batch 10`: ~0.2 ms on a fast 2-core VM,
 * ~1 ms on a slow one), and a command of the resolve path that arrives meanwhile waits for
 * it: small calls keep that wait short. After each round the run rests as long as the round
 * took (a Pacer of its own, so only the compaction waits), so a backlog (after a burst, or a
 * scheduler outage) takes at most about half of Redis's time and no run of calls back to back
 * holds up every hop of an event: 200 rounds take 2,000 jobs per queue per run (within
 * UPKEEP_BUDGET_MS of wall time).
 * COMPACT_BUDGET bounds the calls of a run over all queues (COMPACT_CHUNK of them per round
 * trip): with more queues than that, a run goes on where the last one stopped.
 */
export const COMPACT_BATCH = 10;
const COMPACT_ROUNDS = 200;
export const COMPACT_BUDGET = 2000;

/**
 * Compaction of completed continuation jobs (the engine's continuations.ts): each queue of
 * the registry's tenants and groups, jobs finished `compactAfterMs` ago or earlier, at
 * most COMPACT_ROUNDS rounds of COMPACT_BATCH jobs per queue, each round followed by a rest
 * as long as it took, a queue leaving the rounds once it has nothing more due, at most
 * COMPACT_BUDGET calls per run; the queues are taken from where the last run's budget
 * stopped. What one run leaves, the next takes. Every scheduler may run it: each call is
 * atomic and the cursor shared.
 */
export class Compaction {
  #next = 0;
  /** rests after each round as long as it took; its own, so the dispatcher's steps never wait for it */
  readonly #pacer = new Pacer(1);

  constructor(readonly budget = COMPACT_BUDGET) {}

  /** One run; how many jobs it compacted. `until`: the performance.now() after which no round starts. */
  async run(
    redis: RedisLike,
    queuePrefix: string,
    queues: readonly string[],
    compactAfterMs: number,
    now = Date.now(),
    until = Number.POSITIVE_INFINITY,
  ): Promise<number> {
    if (queues.length === 0) return 0;
    const start = this.#next % queues.length;
    let open = [...queues.slice(start), ...queues.slice(0, start)];
    let left = this.budget;
    let compacted = 0;
    for (let round = 0; round < COMPACT_ROUNDS && open.length > 0 && left > 0 && performance.now() < until; round++) {
      const taken = open.slice(0, left);
      left -= taken.length;
      if (round === 0) this.#next = (start + taken.length) % queues.length;
      const results = await this.#pacer.run(true, () =>
        compactContinuations(redis, queuePrefix, taken, now - compactAfterMs, COMPACT_BATCH, { now }),
      );
      compacted += results.reduce((n, r) => n + r.compacted, 0);
      open = results.filter((r) => r.more).map((r) => r.queue);
    }
    return compacted;
  }
}
