/**
 * Firing timeouts in bounded steps. Each step sends at most `step` waits to Redis,
 * one `timeoutWait` call per partition among them in one pipeline (each call atomic on
 * its own, each wait judged on its own: the event-time rule stays in Lua), and handles
 * the answers; before the next step the
 * firing rests for `restRatio` times as long as that step took (at most MAX_REST_MS;
 * the rest is kept by a `Pacer`, under `rendezvous start` the one the dispatcher uses).
 * So however many waits share a deadline, no step holds Redis or this process for
 * long, and a burst takes at most about 1 / (1 + restRatio) of the process's time:
 * the API's requests (in the same process under `rendezvous start`), the dispatcher
 * handing out the continuations and other clients' commands are served between steps.
 */

import { failpoint, type Metrics, NO_TRACING, type Pacer, type Store, type Tracing } from "@rendezvous/engine";
import type { Wait } from "@rendezvous/protocol";

/** What firing did: waits timed out, waits left for a retry job, steps taken and the largest. */
export interface FireResult {
  timedOut: number;
  retry: number;
  /** pipelined rounds of `timeoutWait` calls sent */
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
  /** runs each step after the rest the previous full one owes (shared with the dispatcher under `rendezvous start`) */
  pacer: Pacer;
  retryMs: number;
  /** makes sure a bucket job fires at each of these deadlines (waits held back by the rule) */
  retryAt(deadlines: Array<{ deadline: number }>): Promise<unknown>;
  /** a span per wait timed out, child of its registration context @defaultValue NO_TRACING */
  tracing?: Tracing;
}

/** Times out `ids` in steps of at most `o.step` waits; a retry job for those an on-time event still holds back. */
export async function fireInSteps(ids: readonly string[], o: FiringOptions): Promise<FireResult> {
  const total = noFiring();
  for (let from = 0; from < ids.length; from += o.step) {
    const slice = ids.slice(from, from + o.step);
    await o.pacer.run(slice.length >= o.step, () => fireStep(slice, o, total));
  }
  return total;
}

async function fireStep(slice: string[], o: FiringOptions, total: FireResult): Promise<void> {
  const tracing = o.tracing ?? NO_TRACING;
  const startedAt = tracing.enabled ? Date.now() : 0;
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
      if (tracing.enabled) {
        // the resolution's span, in the registration's trace (the step's call is its time)
        tracing
          .start("rendezvous.timeout", {
            parent: r.registration,
            startTime: startedAt,
            attributes: {
              "rendezvous.wait.id": r.wait.id,
              "rendezvous.tenant": r.wait.tenant,
              "rendezvous.resolution.kind": "timeout",
              ...(seconds !== undefined ? { "rendezvous.timeout.lateness_s": seconds } : {}),
            },
          })
          .end();
      }
    } else if (r.outcome === "backlog" || (r.outcome === "not_due" && r.deadline !== null)) {
      later.push({ deadline: Math.max(firedAt + o.retryMs, r.deadline ?? 0) });
    }
  }
  if (later.length > 0) await o.retryAt(later);
  total.retry += later.length;
  total.steps++;
  total.largestStep = Math.max(total.largestStep, slice.length);
}
