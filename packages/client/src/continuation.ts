/**
 * What a continuation handler is given, whichever transport delivered the
 * continuation (HTTP claim or the BullMQ queue), and the claim every transport makes
 * before running it: `consume` first-claimer-wins (docs/api.md, Continuations).
 */
import type { HostClient } from "./host.js";
import type { Wait } from "./wire.js";

export interface Continuation {
  /** the wait as consumed (resolution, consumption, timeline) */
  wait: Wait;
  /** the resolving event's payload (kind `event`), the delivered payload (`deliver`), else null */
  payload: Record<string, unknown> | null;
  /** true when the deadline resolved it */
  timedOut: boolean;
}

/**
 * Claims a resolved wait for `worker` and runs `handler` when this worker is the
 * first claimer, or was the first claimer of an earlier delivery that did not finish
 * (same worker name: a crash between claim and handler is retried). Answers whether
 * the handler ran.
 */
export async function claimAndRun(
  host: HostClient,
  worker: string,
  waitId: string,
  handler: (continuation: Continuation) => Promise<void>,
): Promise<boolean> {
  const claimed = await host.consume(waitId, worker);
  if (!claimed.first && claimed.consumption.by !== worker) return false; // another worker has it
  const r = claimed.wait.resolution;
  await handler({
    wait: claimed.wait,
    payload: r?.event?.payload ?? r?.payload ?? null,
    timedOut: r?.kind === "timeout",
  });
  return true;
}
