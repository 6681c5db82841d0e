/**
 * The BullMQ transport of continuations, for trusted deployments: a BullMQ worker on
 * `continuations.<tenant>` (or a named group's queue) straight from Redis (it needs the deployment's Redis
 * credentials, which read every tenant). Each continuation goes through `runOnce`
 * (consume, then the handler). The HTTP transport (continuation-worker.ts) needs only a
 * host key. This module is the only one of the client that imports bullmq.
 *
 * With `@opentelemetry/api` installed (tracing.ts), each job is processed inside a consumer
 * span whose parent is the job's `opts.telemetry.metadata` (bullmq-otel's carrier, which the
 * dispatcher writes): the consume request carries it.
 */

import { type ConnectionOptions, Worker } from "bullmq";
import { continuationQueue, runOnce } from "./continuation.js";
import type { QueueContinuationWorkerOptions } from "./continuation-worker.js";
import { inProcessSpan, jobCarrier } from "./tracing.js";
import type { Wait } from "./wire.js";

/** A continuation re-delivered after a crashed worker is never failed for it (BullMQ's maxStalledCount). */
const NEVER_FAIL = 1_000_000_000;

/** The main entry's BullMQ options with `connection` typed as bullmq's (ioredis options or instance; a `Cluster` for a cluster). */
export type BullmqContinuationWorkerOptions = Omit<QueueContinuationWorkerOptions, "connection"> & {
  connection: ConnectionOptions;
};

export class BullmqContinuationWorker {
  readonly #worker: Worker<Wait>;

  constructor(opts: BullmqContinuationWorkerOptions) {
    const queue = opts.queue ?? continuationQueue(opts.tenant, opts.group);
    this.#worker = new Worker<Wait>(
      queue,
      async (job) => {
        const attributes = {
          "messaging.system": "bullmq",
          "messaging.operation.type": "process",
          "messaging.destination.name": queue,
          "messaging.message.id": job.data.id,
          "rendezvous.wait.id": job.data.id,
          "rendezvous.run.id": job.data.runId,
        };
        await inProcessSpan(jobCarrier(job.opts), queue, attributes, async () => {
          await runOnce(opts.host, opts.name, job.data.id, opts.handler);
        });
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
