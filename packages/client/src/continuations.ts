/**
 * The host side of continuations: a BullMQ worker on `continuations.<tenant>` that
 * claims each continuation with `consume` and runs the handler once. Delivery is
 * at least once; `consume` is the once: the handler runs when this worker is the
 * first claimer, or when it was the first claimer of an earlier delivery that did
 * not finish (same worker name), so a crash between claim and handler is retried.
 */
import { type ConnectionOptions, Worker } from "bullmq";
import type { Continuation } from "./continuation.js";
import type { HostClient } from "./host.js";
import type { Wait } from "./wire.js";

export type { Continuation };

/** BullMQ queue of a tenant's continuations (docs/api.md, Continuations). */
export function continuationQueue(tenant: string): string {
  return `continuations.${tenant}`;
}

export interface ContinuationWorkerOptions {
  tenant: string;
  host: HostClient;
  /** this worker's name: recorded as the claimer */
  name: string;
  /** Redis of the rendezvous deployment (ioredis options or instance; an ioredis `Cluster` for a cluster) */
  connection: ConnectionOptions;
  /**
   * BullMQ prefix = RENDEZVOUS_PREFIX; on a Redis Cluster the deployment uses
   * `{RENDEZVOUS_PREFIX}` (hash tag: one slot per queue), so pass e.g. `"{rdv}"`.
   * @defaultValue "rdv"
   */
  prefix?: string;
  /** @defaultValue 8 */
  concurrency?: number;
  handler: (continuation: Continuation) => Promise<void>;
}

export class ContinuationWorker {
  readonly #worker: Worker<Wait>;

  constructor(opts: ContinuationWorkerOptions) {
    this.#worker = new Worker<Wait>(
      continuationQueue(opts.tenant),
      async (job) => {
        const claimed = await opts.host.consume(job.data.id, opts.name);
        if (!claimed.first && claimed.consumption.by !== opts.name) return; // another worker has it
        const r = claimed.wait.resolution;
        await opts.handler({
          wait: claimed.wait,
          payload: r?.event?.payload ?? r?.payload ?? null,
          timedOut: r?.kind === "timeout",
        });
      },
      { connection: opts.connection, prefix: opts.prefix ?? "rdv", concurrency: opts.concurrency ?? 8 },
    );
  }

  /** The underlying BullMQ worker (events: completed, failed, error). */
  get worker(): Worker<Wait> {
    return this.#worker;
  }

  async close(): Promise<void> {
    await this.#worker.close();
  }
}
