/**
 * What a host's continuation handler gets, and the once-only step every transport shares:
 * `consume` (first claimer wins) before the handler. Delivery is at least once; `consume`
 * is the once: the handler runs when this worker is the first claimer, or when it was the
 * first claimer of an earlier delivery that did not finish (same worker name), so a crash
 * between claim and handler is retried. No Redis, no BullMQ here.
 */
import type { ConsumeResult, HostClient } from "./host.js";
import type { Wait } from "./wire.js";

/**
 * BullMQ queue of a tenant's continuations (docs/api.md, Continuations), or of one of its
 * named groups: `continuations.<tenant>[.<group>]`. The server's `continuationQueueName`
 * (@rendezvous/protocol, which the installed client does not depend on) names the same; a test
 * checks that they agree.
 */
export function continuationQueue(tenant: string, group?: string): string {
  return group === undefined ? `continuations.${tenant}` : `continuations.${tenant}.${group}`;
}

export interface Continuation {
  /** the wait as consumed (resolution, consumption, timeline) */
  wait: Wait;
  /** the resolving event's payload (kind `event`), the delivered payload (`deliver`), else null */
  payload: Record<string, unknown> | null;
  /** true when the deadline resolved it */
  timedOut: boolean;
}

export type ContinuationHandler = (continuation: Continuation) => Promise<void>;

/** Consumes the wait as `worker` and runs the handler if it is this worker's; whether it ran. */
export async function runOnce(
  host: HostClient,
  worker: string,
  waitId: string,
  handler: ContinuationHandler,
): Promise<boolean> {
  return runConsumed(await host.consume(waitId, worker), worker, handler);
}

/** Runs the handler on a wait consumed as `worker` if it is this worker's; whether it ran. */
export async function runConsumed(
  claimed: Pick<ConsumeResult, "first" | "consumption" | "wait">,
  worker: string,
  handler: ContinuationHandler,
): Promise<boolean> {
  if (!claimed.first && claimed.consumption.by !== worker) return false; // another worker has it
  const r = claimed.wait.resolution;
  await handler({
    wait: claimed.wait,
    payload: r?.event?.payload ?? r?.payload ?? null,
    timedOut: r?.kind === "timeout",
  });
  return true;
}
