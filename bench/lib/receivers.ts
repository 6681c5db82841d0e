/**
 * The host's side of the black-box benchmark: a continuation worker in the driver
 * process that records when each continuation arrives. "Arrived" is the moment the
 * handler is invoked; the handler records the time and returns.
 *
 * - BullMQ: a plain bullmq `Worker` on `continuations.<tenant>` (the host's own code
 *   would consume the wait inside it; that call is not made, so not counted);
 * - HTTP claim: the client's `ContinuationWorker` over HTTP (claim long poll → consume →
 *   handler → ack); its consume comes before the handler, so it is counted.
 */
import { ContinuationWorker, HostClient } from "@rendezvous/client";
import { continuationQueueName } from "@rendezvous/protocol";
import { Worker } from "bullmq";
import { Redis } from "ioredis";

/**
 * The times (epoch ms) a BullMQ continuation carries, for the one-at-a-time hops: the
 * event's acceptance (its stream id's time), the match (the resolution's `at`), the job's
 * creation by the dispatcher (`timestamp`) and its move to active (`processedOn`).
 */
export interface HopMarks {
  accepted: number;
  matched: number;
  created: number;
  active: number;
}

/** When each expected continuation arrived (performance.now()); ids not expected are ignored. */
export class Arrivals {
  readonly #expected = new Map<string, (at: number) => void>();
  /** the marks of the continuations that carried them, by wait id (taken by `marksOf`) */
  readonly #marks = new Map<string, HopMarks>();

  /** The hop marks of wait `waitId`'s continuation, once (a BullMQ one only). */
  marksOf(waitId: string): HopMarks | undefined {
    const m = this.#marks.get(waitId);
    this.#marks.delete(waitId);
    return m;
  }

  /** keep the marks of the continuations (the one-at-a-time rows turn it on) */
  keepMarks = false;

  /** Notes the marks of an expected continuation (before `arrived`), when `keepMarks`. */
  mark(waitId: string, marks: HopMarks): void {
    if (this.keepMarks && this.#expected.has(waitId)) this.#marks.set(waitId, marks);
  }

  /** A promise of the arrival time of the continuation of wait `waitId`. */
  expect(waitId: string): Promise<number> {
    return new Promise((resolve) => this.#expected.set(waitId, resolve));
  }

  arrived(waitId: string): void {
    const at = performance.now();
    const resolve = this.#expected.get(waitId);
    if (!resolve) return;
    this.#expected.delete(waitId);
    resolve(at);
  }

  get outstanding(): number {
    return this.#expected.size;
  }
}

export type Transport = "bullmq" | "http";

export interface Receiver {
  transport: Transport;
  close(): Promise<void>;
}

export function bullmqReceiver(
  arrivals: Arrivals,
  opts: { redisUrl: string; prefix: string; tenant: string; concurrency: number },
): Receiver {
  const connection = new Redis(opts.redisUrl, { maxRetriesPerRequest: null, connectionName: "bench:host-worker" });
  const worker = new Worker(
    continuationQueueName(opts.tenant),
    async (job) => {
      const id = job.id as string;
      const resolution = (job.data as { resolution?: { at?: string; event?: { streamId?: string } } }).resolution;
      arrivals.mark(id, {
        accepted: Number(resolution?.event?.streamId?.split("-")[0]),
        matched: Date.parse(resolution?.at ?? ""),
        created: job.timestamp,
        active: job.processedOn ?? Number.NaN,
      });
      arrivals.arrived(id);
    },
    { connection, prefix: opts.prefix, concurrency: opts.concurrency },
  );
  return {
    transport: "bullmq",
    async close() {
      await worker.close();
      await connection.quit();
    },
  };
}

export function httpReceiver(
  arrivals: Arrivals,
  opts: { baseUrl: string; hostKey: string; concurrency: number },
): Receiver {
  const worker = new ContinuationWorker({
    host: new HostClient({ baseUrl: opts.baseUrl, token: opts.hostKey }),
    name: "bench-http-worker",
    concurrency: opts.concurrency,
    handler: async (c) => {
      arrivals.arrived(c.wait.id);
    },
  });
  return { transport: "http", close: () => worker.close() };
}
