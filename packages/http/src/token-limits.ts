/**
 * The rates of the token routes (docs/api.md, Token routes): requests per second per
 * client address and per wait, counted in this process in one-second windows. The
 * counts of a window are dropped when the next begins, so memory is bounded by the
 * requests of one second; past MAX_KEYS distinct keys in one window every new key is
 * refused (a flood of addresses or waits is load: 429, not memory).
 */

const MAX_KEYS = 100_000;

export type Admission = { ok: true } | { ok: false; retryAfterSec: number };

export class WindowLimiter {
  #window = -1;
  readonly #counts = new Map<string, number>();
  readonly #now: () => number;

  /** @param now clock in ms @defaultValue Date.now */
  constructor(now: () => number = Date.now) {
    this.#now = now;
  }

  /** Counts one request of `key`; refused past `perSec` in the current second. */
  take(key: string, perSec: number): Admission {
    const now = this.#now();
    const window = Math.floor(now / 1000);
    if (window !== this.#window) {
      this.#window = window;
      this.#counts.clear();
    }
    const retryAfterSec = 1;
    const count = this.#counts.get(key);
    if (count === undefined && this.#counts.size >= MAX_KEYS) return { ok: false, retryAfterSec };
    if ((count ?? 0) >= perSec) return { ok: false, retryAfterSec };
    this.#counts.set(key, (count ?? 0) + 1);
    return { ok: true };
  }
}
