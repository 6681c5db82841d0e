/**
 * Firing timeouts in bounded steps. Each step sends at most `step` waits to Redis,
 * one `timeoutWait` call per wait in one pipeline (each call atomic on its own: the
 * event-time rule stays in Lua), and handles the answers; before the next step the
 * firing rests for `restRatio` times as long as that step took (at most MAX_REST_MS).
 * So however many waits share a deadline, no step holds Redis or this process for
 * long, and a burst takes at most about 1 / (1 + restRatio) of the process's time:
 * the API's requests (in the same process under `rendezvous start`), the dispatcher
 * handing out the continuations and other clients' commands are served between steps.
 */
import { setImmediate as nextTurn, setTimeout as sleep } from "node:timers/promises";
import { failpoint, type Metrics, type Store, type Wait } from "@rendezvous/core";

/** What firing did: waits timed out, waits left for a retry job, steps taken and the largest. */
export interface FireResult {
  timedOut: number;
  retry: number;
  /** pipelined rounds of `timeoutWait` sent */
  steps: number;
  /** most waits in one round */
  largestStep: number;
}

export function noFiring(): FireResult {
  return { timedOut: 0, retry: 0, steps: 0, largestStep: 0 };
}

export function addFiring(into: FireResult, r: FireResult): FireResult {
  into.timedOut += r.timedOut;
  into.retry += r.retry;
  into.steps += r.steps;
  into.largestStep = Math.max(into.largestStep, r.largestStep);
  return into;
}

/**
 * A timeout's lateness, seconds: from the later of its deadline and its registration
 * to when it fired. A deadline already past at registration is accepted and times out
 * at once; measured from the deadline itself it would count time before the wait
 * existed (decades for a deadline in 1970), which says nothing about the scheduler.
 */
export function lateness(wait: Wait, firedAt: number): number | undefined {
  const deadline = Date.parse(wait.deadline ?? "");
  if (!Number.isFinite(deadline)) return undefined;
  const created = Date.parse(wait.createdAt);
  const from = Number.isFinite(created) ? Math.max(deadline, created) : deadline;
  return Math.max(0, firedAt - from) / 1000;
}

export interface FiringOptions {
  store: Store;
  metrics: Metrics;
  /** most waits per step */
  step: number;
  /** rest between steps, as a multiple of the last step's duration (0: one turn of the event loop) */
  restRatio: number;
  retryMs: number;
  /** makes sure a bucket job fires at each of these deadlines (waits held back by the rule) */
  retryAt(deadlines: Array<{ deadline: number }>): Promise<unknown>;
}

/** The longest rest between two steps, ms: a slow step (a busy Redis) does not stall a burst for long. */
export const MAX_REST_MS = 50;

/** Times out `ids` in steps of at most `o.step` waits; a retry job for those an on-time event still holds back. */
export async function fireInSteps(ids: readonly string[], o: FiringOptions): Promise<FireResult> {
  const total = noFiring();
  let lastMs = 0;
  for (let from = 0; from < ids.length; from += o.step) {
    if (from > 0) {
      const rest = Math.min(MAX_REST_MS, lastMs * o.restRatio);
      await (rest >= 1 ? sleep(rest) : nextTurn());
    }
    const t0 = performance.now();
    const slice = ids.slice(from, from + o.step);
    const results = await o.store.timeoutMany(slice);
    failpoint("scheduler.after-timeout");
    const firedAt = Date.now();
    const later: Array<{ deadline: number }> = [];
    for (const r of results) {
      if (r.outcome === "timed_out") {
        total.timedOut++;
        o.metrics.resolutions.inc({ kind: "timeout", tenant: r.wait.tenant });
        const seconds = lateness(r.wait, firedAt);
        if (seconds !== undefined) o.metrics.timeoutLateness.observe({ tenant: r.wait.tenant }, seconds);
      } else if (r.outcome === "backlog" || (r.outcome === "not_due" && r.deadline !== null)) {
        later.push({ deadline: Math.max(firedAt + o.retryMs, r.deadline ?? 0) });
      }
    }
    if (later.length > 0) await o.retryAt(later);
    total.retry += later.length;
    total.steps++;
    lastMs = performance.now() - t0;
    total.largestStep = Math.max(total.largestStep, slice.length);
  }
  return total;
}
