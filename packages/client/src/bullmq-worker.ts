/**
 * The BullMQ transport of continuations, for trusted deployments: a BullMQ worker on
 * `continuations.<tenant>` (or a named group's queue) straight from Redis (it needs the deployment's Redis
 * credentials, which read every tenant). Each continuation goes through `runOnce`
 * (consume, then the handler). The HTTP transport (continuation-worker.ts) needs only a
 * host key. This module is the only one of the client that imports bullmq.
 */

import { type ConnectionOptions, Worker } from "bullmq";
import { type ContinuationHandler, continuationQueue, runOnce } from "./continuation.js";
import type { HostClient } from "./host.js";
import type { Wait } from "./wire.js";

/** A continuation re-delivered after a crashed worker is never failed for it (BullMQ's maxStalledCount). */
const NEVER_FAIL = 1_000_000_000;

export interface BullmqContinuationWorkerOptions {
  /** selects this transport (the presence of `connection` does too) */
  transport?: "bullmq";
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
  /** take a named group's queue, `continuations.<tenant>.<group>` (ignored with `queue`) */
  group?: string;
  /** the queue to take from @defaultValue continuationQueue(tenant, group) */
  queue?: string;
  /** @defaultValue 8 */
  concurrency?: number;
  handler: ContinuationHandler;
}

export class BullmqContinuationWorker {
  readonly #worker: Worker<Wait>;

  constructor(opts: BullmqContinuationWorkerOptions) {
    this.#worker = new Worker<Wait>(
      opts.queue ?? continuationQueue(opts.tenant, opts.group),
      async (job) => {
        await runOnce(opts.host, opts.name, job.data.id, opts.handler);
      },
      {
        connection: opts.connection,
        prefix: opts.prefix ?? "rdv",
        concurrency: opts.concurrency ?? 8,
        maxStalledCount: NEVER_FAIL,
      },
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
