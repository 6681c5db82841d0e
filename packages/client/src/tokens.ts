/**
 * Completion tokens and outcomes in the SDK (docs/api.md, "Completion tokens, failure
 * and heartbeats"): `TokenClient` for a token holder (no credential: the token is one),
 * and `resultOf`, a settled wait as a discriminated result (nothing thrown for a timeout).
 */

import { jsonAttempt } from "./attempt.js";
import { type RetryOptions, withRetry } from "./retry.js";
import type { FailureError, JsonObject, Wait } from "./wire.js";

/** How a settled wait ended for the run. */
export type WaitResult =
  /** resolved by an event, a delivery or a token, with the payload it carried ({} when none) */
  | { status: "success"; payload: JsonObject; wait: Wait }
  /** resolved as a failure (token fail, delivery with outcome failure), with its error */
  | { status: "failure"; error: JsonObject | null; wait: Wait }
  | { status: "timed_out"; wait: Wait }
  | { status: "cancelled"; wait: Wait };

/** A settled wait as a WaitResult; null while it is still waiting. */
export function resultOf(wait: Wait): WaitResult | null {
  const r = wait.resolution;
  if (wait.state === "waiting" || !r) return null;
  if (wait.state === "timed_out") return { status: "timed_out", wait };
  if (wait.state === "cancelled") return { status: "cancelled", wait };
  if (r.outcome === "failure") return { status: "failure", error: r.error ?? null, wait };
  return { status: "success", payload: r.event?.payload ?? r.payload ?? {}, wait };
}

/** What a token holder is told: the wait id and its state, never the wait. */
export interface TokenResult {
  waitId: string;
  state: "resolved";
  outcome: "success" | "failure";
}

export type TokenClientOptions = RetryOptions & {
  /** e.g. `https://rdv.example` (the server's publicUrl) */
  baseUrl: string;
  /** per-attempt timeout @defaultValue 10000 */
  timeoutMs?: number;
  /** @defaultValue globalThis.fetch */
  fetch?: typeof fetch;
};

/**
 * The calls of a token holder. Each is retried on 429 and 5xx; a complete or fail whose
 * first attempt committed before its answer was lost answers `not_waiting` on the retry.
 */
export class TokenClient {
  readonly #opts: TokenClientOptions;
  readonly #fetch: typeof fetch;
  readonly #base: string;

  constructor(opts: TokenClientOptions) {
    this.#opts = opts;
    this.#fetch = opts.fetch ?? globalThis.fetch;
    this.#base = opts.baseUrl.replace(/\/+$/, "");
  }

  /** Completes the token's wait (single use). Throws `token_invalid`, `not_waiting`, `deadline_passed`. */
  async complete(token: string, payload?: JsonObject): Promise<TokenResult> {
    return (await this.#call(token, "complete", payload === undefined ? {} : { payload })) as TokenResult;
  }

  /** Fails the token's wait (single use): it resolves with outcome failure and this error. */
  async fail(token: string, error: FailureError): Promise<TokenResult> {
    return (await this.#call(token, "fail", { error })) as TokenResult;
  }

  /** A heartbeat: the wait's deadline becomes now + its heartbeatMs; the new deadline (ISO). */
  async heartbeat(token: string): Promise<{ waitId: string; deadline: string }> {
    return (await this.#call(token, "heartbeat", {})) as { waitId: string; deadline: string };
  }

  async #call(token: string, action: string, body: unknown): Promise<unknown> {
    const url = `${this.#base}/v1/tokens/${encodeURIComponent(token)}/${action}`;
    const timeoutMs = this.#opts.timeoutMs ?? 10_000;
    const init = { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) };
    // (the URL holds the token: a network error names the server only)
    const answer = await withRetry(
      () => jsonAttempt(this.#fetch, { url, init, timeoutMs, target: this.#base }),
      this.#opts,
    );
    return answer.body;
  }
}
