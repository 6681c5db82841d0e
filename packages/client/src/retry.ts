/**
 * Retries with capped exponential backoff and jitter. Safe for producer sends:
 * the event id is the dedup key, so a resend after a lost answer is a `duplicate`
 * answering the original, never a second event.
 */

export interface RetryOptions {
  /** retries after the first attempt @defaultValue 4 */
  retries?: number;
  /** first backoff @defaultValue 100 */
  minDelayMs?: number;
  /** largest backoff, and the cap on a server's Retry-After @defaultValue 10000 */
  maxDelayMs?: number;
}

/** What one attempt says about retrying. */
export type Attempt<T> = { done: true; value: T } | { done: false; error: unknown; retryAfterMs?: number };

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Backoff before retry number `n` (0-based): min(max, min·2ⁿ), jittered to [½, 1]. */
export function backoff(n: number, minDelayMs: number, maxDelayMs: number, random: () => number = Math.random): number {
  const ceiling = Math.min(maxDelayMs, minDelayMs * 2 ** n);
  return Math.round(ceiling / 2 + (random() * ceiling) / 2);
}

/** Runs `attempt` until it is done or the retries are spent; then throws the last error. */
export async function withRetry<T>(attempt: () => Promise<Attempt<T>>, opts: RetryOptions = {}): Promise<T> {
  const retries = opts.retries ?? 4;
  const minDelayMs = opts.minDelayMs ?? 100;
  const maxDelayMs = opts.maxDelayMs ?? 10_000;
  for (let n = 0; ; n++) {
    const result = await attempt();
    if (result.done) return result.value;
    if (n >= retries) throw result.error;
    const wait = Math.max(backoff(n, minDelayMs, maxDelayMs), Math.min(result.retryAfterMs ?? 0, maxDelayMs));
    await sleep(wait);
  }
}
