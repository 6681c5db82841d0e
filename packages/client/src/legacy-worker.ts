/**
 * The main entry's `ContinuationWorker` for callers written before the `./bullmq`
 * entry: the same BullMQ worker, but bullmq is loaded only when one is constructed,
 * so `import "@rendezvous/client"` works in a project without bullmq (an optional
 * peer). Its types name no bullmq type for the same reason; the `./bullmq` entry has
 * the fully typed worker.
 */
import { createRequire } from "node:module";
import type * as BullMQ from "bullmq";
import { type Continuation, claimAndRun } from "./continuation.js";
import type { HostClient } from "./host.js";
import type { Wait } from "./wire.js";

/** The BullMQ `Worker` underneath, as far as this entry types it. */
export interface QueueWorker {
  // biome-ignore lint/suspicious/noExplicitAny: BullMQ's event arguments (job, error…) per event name
  on(event: string, listener: (...args: any[]) => void): unknown;
  close(): Promise<void>;
}

export interface LegacyContinuationWorkerOptions {
  tenant: string;
  host: HostClient;
  /** this worker's name: recorded as the claimer */
  name: string;
  /** Redis of the rendezvous deployment: ioredis options or instance (BullMQ `ConnectionOptions`) */
  connection: object;
  /** BullMQ prefix = RENDEZVOUS_PREFIX @defaultValue "rdv" */
  prefix?: string;
  /** @defaultValue 8 */
  concurrency?: number;
  handler: (continuation: Continuation) => Promise<void>;
}

/**
 * @deprecated import `ContinuationWorker` from `@rendezvous/client/bullmq` (same
 * options, BullMQ types), or use the HTTP worker, which needs only a host key.
 */
export class ContinuationWorker {
  readonly #worker: BullMQ.Worker<Wait>;

  constructor(opts: LegacyContinuationWorkerOptions) {
    const { Worker } = createRequire(import.meta.url)("bullmq") as typeof BullMQ;
    this.#worker = new Worker<Wait>(
      `continuations.${opts.tenant}`,
      async (job) => {
        await claimAndRun(opts.host, opts.name, job.data.id, opts.handler);
      },
      {
        connection: opts.connection as BullMQ.ConnectionOptions,
        prefix: opts.prefix ?? "rdv",
        concurrency: opts.concurrency ?? 8,
      },
    );
  }

  /** The underlying BullMQ worker (events: active, completed, failed, error). */
  get worker(): QueueWorker {
    return this.#worker;
  }

  async close(): Promise<void> {
    await this.#worker.close();
  }
}
