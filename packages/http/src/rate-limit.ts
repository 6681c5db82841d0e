/**
 * Per-producer rate limit (`rateLimitPerSec`), counted in events: a token bucket
 * per `tenant/producer` holding at most one second's worth of events.
 *
 * The buckets live in this process: with N API processes a producer may send up to
 * N × its rate in total (see docs/ingest.md). A request of n events needs
 * min(n, capacity) tokens and takes n, so the bucket may go into debt: a batch
 * larger than one second's worth still passes once, and the producer then waits
 * until the debt is paid, which keeps the long-run rate at the limit.
 */

export type Take = { ok: true } | { ok: false; retryAfterSec: number };

interface Bucket {
  tokens: number;
  at: number;
}

export class RateLimiter {
  readonly #buckets = new Map<string, Bucket>();
  readonly #now: () => number;

  /** @param now clock in ms @defaultValue Date.now */
  constructor(now: () => number = Date.now) {
    this.#now = now;
  }

  /** Takes `count` events from `key`'s bucket refilled at `perSec`. */
  take(key: string, perSec: number, count: number): Take {
    const now = this.#now();
    const capacity = Math.max(perSec, 1);
    const bucket = this.#buckets.get(key) ?? { tokens: capacity, at: now };
    bucket.tokens = Math.min(capacity, bucket.tokens + ((now - bucket.at) / 1000) * perSec);
    bucket.at = now;
    this.#buckets.set(key, bucket);
    const need = Math.min(count, capacity);
    if (bucket.tokens >= need) {
      bucket.tokens -= count;
      return { ok: true };
    }
    return { ok: false, retryAfterSec: Math.max(1, Math.ceil((need - bucket.tokens) / perSec)) };
  }
}
