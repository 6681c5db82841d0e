/**
 * `ContinuationWorker`: runs a handler once per continuation of the host's tenant.
 *
 * By default over HTTP with the host key alone (docs/api.md, Continuations over HTTP): it
 * long-polls `claimContinuations` for as many leases as it has free slots, the server
 * consuming each wait for it in the claim (`consume: true`; first claimer wins; a lease
 * without `consumed` is consumed here), runs the handler when it is this worker's, extends
 * the lease every half lease while the handler runs, and acknowledges it after: the acks of
 * handlers that finish while an ack request is in flight go together in the next
 * `ackContinuations`. A handler that throws is not acknowledged: the lease expires and the
 * continuation comes back (`attempt` + 1), to this worker or another. Against a server
 * without these two (an older one) it falls back to `consume` and `ackContinuation` per lease.
 *
 * With `connection` (or `transport: "bullmq"`) it takes the continuations from the BullMQ
 * queue in Redis instead (bullmq-worker.ts, loaded only then: this module imports neither
 * bullmq nor ioredis).
 *
 * With `@opentelemetry/api` installed (tracing.ts), each lease is handled inside a consumer
 * span whose parent is the lease's `traceparent`: its consume, extends and ack carry it. The
 * claim loop runs in the root context.
 */
import type { BullmqContinuationWorkerOptions } from "./bullmq-worker.js";
import { type ContinuationHandler, continuationQueue, runConsumed, runOnce } from "./continuation.js";
import { RendezvousApiError } from "./errors.js";
import type { ContinuationLease, HostClient } from "./host.js";
import { backoff } from "./retry.js";
import { activeContext, detached, inProcessSpan, otel, type ProcessOutcome, withContext } from "./tracing.js";

type Otel = Awaited<ReturnType<typeof otel>>;

export interface HttpContinuationWorkerOptions {
  /** over HTTP (the default) */
  transport?: "http";
  /** a client with the tenant's host key (or the admin token and `tenant`) */
  host: HostClient;
  /** this worker's name: recorded as the claimer */
  name: string;
  /** continuations handled at once @defaultValue 8 */
  concurrency?: number;
  /** lease asked for each continuation, 1000–600000 ms @defaultValue 30000 */
  leaseMs?: number;
  /** long poll of each claim, 0–20000 ms @defaultValue 10000 */
  pollMs?: number;
  /** claim only this named group's continuations (the tenant's `continuationGroups`); absent = the ungrouped ones */
  group?: string;
  /** called with what went wrong (a failed claim, handler, extend or ack); the worker carries on */
  onError?: (err: unknown, lease?: ContinuationLease) => void;
  handler: ContinuationHandler;
}

/**
 * The BullMQ transport's options as the main entry takes them. `connection` is opaque here
 * (ioredis options, an ioredis instance or Cluster) so that the main entry's types name
 * nothing of bullmq, an optional peer; `@rendezvous/client/bullmq` has its precise type.
 */
export interface QueueContinuationWorkerOptions {
  /** selects this transport (the presence of `connection` does too) */
  transport?: "bullmq";
  tenant: string;
  host: HostClient;
  /** this worker's name: recorded as the claimer */
  name: string;
  /** Redis of the rendezvous deployment (bullmq's `ConnectionOptions`) */
  connection: object;
  /** BullMQ prefix = RENDEZVOUS_PREFIX (`{rdv}` on a Redis Cluster) @defaultValue "rdv" */
  prefix?: string;
  /** take a named group's queue, `continuations.<tenant>.<group>` (ignored with `queue`) */
  group?: string;
  /** the queue to take from @defaultValue continuationQueue(tenant, group) */
  queue?: string;
  /** @defaultValue 8 */
  concurrency?: number;
  handler: ContinuationHandler;
}

export type ContinuationWorkerOptions = HttpContinuationWorkerOptions | QueueContinuationWorkerOptions;

/** What the main entry keeps of the BullMQ worker it loaded. */
interface Closable {
  close(): Promise<void>;
}

const isBullmq = (o: ContinuationWorkerOptions): o is QueueContinuationWorkerOptions =>
  o.transport === "bullmq" || (o as { connection?: unknown }).connection !== undefined;

const sleep = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve) => {
    const t = setTimeout(resolve, ms);
    signal.addEventListener(
      "abort",
      () => {
        clearTimeout(t);
        resolve();
      },
      { once: true },
    );
  });

/** The most leases one `ackContinuations` takes (docs/api.md). */
const ACKS_PER_REQUEST = 100;

/**
 * Batches acknowledgements: one request in flight; the acks asked for meanwhile go in the
 * next one. `ack` resolves true when done, false when the lease was gone (`lease_expired`).
 */
class Acks {
  readonly #host: HostClient;
  readonly #otel: Otel;
  /** `ctx`: the trace context the ack was asked in (its lease's process span), which its request carries */
  #queued: Array<{
    leaseId: string;
    ctx: ReturnType<typeof activeContext>;
    done: (acked: boolean) => void;
    fail: (err: unknown) => void;
  }> = [];
  #sending = false;
  /** false against a server without `POST /v1/continuations/ack`: one request per lease */
  #batch = true;

  constructor(host: HostClient, api: Otel) {
    this.#host = host;
    this.#otel = api;
  }

  ack(leaseId: string): Promise<boolean> {
    if (!this.#batch) return this.#one(leaseId);
    return new Promise((done, fail) => {
      this.#queued.push({ leaseId, ctx: activeContext(this.#otel), done, fail });
      if (!this.#sending) {
        this.#sending = true;
        // the acks of handlers finishing in this same turn go together
        queueMicrotask(() => void this.#send());
      }
    });
  }

  async #one(leaseId: string): Promise<boolean> {
    try {
      await this.#host.ackContinuation(leaseId);
      return true;
    } catch (err) {
      if (err instanceof RendezvousApiError && err.code === "lease_expired") return false;
      throw err;
    }
  }

  async #send(): Promise<void> {
    while (this.#queued.length > 0) {
      const batch = this.#queued.splice(0, ACKS_PER_REQUEST);
      try {
        // the request carries the context of the batch's first lease
        const { expired } = await withContext(this.#otel, batch[0]?.ctx, () =>
          this.#host.ackContinuations(batch.map((a) => a.leaseId)),
        );
        const gone = new Set(expired);
        for (const a of batch) a.done(!gone.has(a.leaseId));
      } catch (err) {
        if (!(err instanceof RendezvousApiError && err.status === 404)) {
          for (const a of batch) a.fail(err);
          continue;
        }
        // an older server: every ack from now on its own
        this.#batch = false;
        for (const a of [...batch, ...this.#queued.splice(0)])
          withContext(this.#otel, a.ctx, () => this.#one(a.leaseId)).then(a.done, a.fail);
      }
    }
    this.#sending = false;
  }
}

/** Whether a claim answer says the server does not know `consume` (an older server). */
const consumeUnknown = (err: unknown) =>
  err instanceof RendezvousApiError && err.status === 400 && JSON.stringify(err.issues ?? []).includes("consume");

export class ContinuationWorker {
  readonly #stop = new AbortController();
  readonly #running = new Set<Promise<void>>();
  #loop: Promise<void> | undefined;
  #bullmq: Promise<Closable> | undefined;

  constructor(opts: ContinuationWorkerOptions) {
    if (isBullmq(opts)) {
      // `connection` is bullmq's ConnectionOptions; its type lives in ./bullmq only
      this.#bullmq = import("./bullmq-worker.js").then(
        (m) => new m.BullmqContinuationWorker(opts as BullmqContinuationWorkerOptions),
      );
      // a missing bullmq shows at close() (and here, once)
      this.#bullmq.catch(() => undefined);
    } else {
      // outside any span: a worker made inside one does not make its claims children of it
      this.#loop = otel().then((api) => detached(api, () => this.#run(opts, api)));
    }
  }

  async #run(opts: HttpContinuationWorkerOptions, api: Otel): Promise<void> {
    const concurrency = opts.concurrency ?? 8;
    const leaseMs = opts.leaseMs ?? 30_000;
    const signal = this.#stop.signal;
    let failures = 0;
    let consume = true;
    const acks = new Acks(opts.host, api);
    let slotFreed: () => void = () => undefined;
    while (!signal.aborted) {
      const free = concurrency - this.#running.size;
      if (free <= 0) {
        await new Promise<void>((resolve) => {
          slotFreed = resolve;
        });
        continue;
      }
      let leases: ContinuationLease[];
      try {
        leases = await opts.host.claimContinuations(
          // without the key after the fallback: an older server refuses it whatever its value
          {
            worker: opts.name,
            max: free,
            leaseMs,
            waitMs: opts.pollMs ?? 10_000,
            group: opts.group,
            ...(consume && { consume }),
          },
          { signal },
        );
        failures = 0;
      } catch (err) {
        if (signal.aborted) break;
        if (consume && consumeUnknown(err)) {
          consume = false; // each lease is consumed here instead
          continue;
        }
        opts.onError?.(err);
        await sleep(backoff(failures++, 200, 5000), signal);
        continue;
      }
      for (const lease of leases) {
        const task = this.#handle(opts, lease, leaseMs, acks).finally(() => {
          this.#running.delete(task);
          slotFreed();
        });
        this.#running.add(task);
      }
    }
  }

  /** One lease, inside its process span (a child of the lease's trace context). */
  #handle(opts: HttpContinuationWorkerOptions, lease: ContinuationLease, leaseMs: number, acks: Acks): Promise<void> {
    const attributes = {
      "messaging.system": "rendezvous",
      "messaging.operation.type": "process",
      "messaging.destination.name": continuationQueue(lease.wait.tenant, opts.group),
      "messaging.message.id": lease.waitId,
      "rendezvous.wait.id": lease.waitId,
      "rendezvous.run.id": lease.wait.runId,
      "rendezvous.continuation.attempt": lease.attempt,
    };
    const carrier = { traceparent: lease.traceparent, tracestate: lease.tracestate };
    return inProcessSpan(carrier, attributes["messaging.destination.name"], attributes, (outcome) =>
      this.#handleLease(opts, lease, leaseMs, acks, outcome),
    );
  }

  async #handleLease(
    opts: HttpContinuationWorkerOptions,
    lease: ContinuationLease,
    leaseMs: number,
    acks: Acks,
    outcome: ProcessOutcome,
  ): Promise<void> {
    const report = (err: unknown) => opts.onError?.(err, lease);
    // keep the lease while the handler runs longer than half of it
    const keep = setInterval(() => {
      opts.host.extendContinuationLease(lease.leaseId, leaseMs).catch(report);
    }, leaseMs / 2);
    try {
      if (lease.consumed) await runConsumed({ ...lease.consumed, wait: lease.wait }, opts.name, opts.handler);
      else await runOnce(opts.host, opts.name, lease.waitId, opts.handler);
    } catch (err) {
      outcome.fail(err);
      report(err);
      return; // not acknowledged: handed out again after the lease
    } finally {
      clearInterval(keep);
    }
    // not acked (false) = lease_expired: it went to another claimer meanwhile, whose consume finds it taken
    await acks.ack(lease.leaseId).catch(report);
  }

  /** Stops claiming and waits for the handlers in progress (their leases are acknowledged). */
  async close(): Promise<void> {
    this.#stop.abort();
    if (this.#bullmq) {
      await (await this.#bullmq).close();
      return;
    }
    await this.#loop;
    await Promise.all([...this.#running]);
  }
}
