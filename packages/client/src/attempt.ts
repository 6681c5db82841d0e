/**
 * One attempt of a JSON request, as every client here makes it: fetch with a per-attempt
 * timeout; an unreachable server or a timeout, a 429 or a 5xx is worth retrying
 * (`withRetry`); any other error answer is thrown at once as a `RendezvousApiError`.
 */
import { type ApiErrorBody, isRetryableStatus, RendezvousApiError, RendezvousNetworkError } from "./errors.js";
import type { Attempt } from "./retry.js";

export interface JsonAttempt {
  url: string;
  init: Omit<RequestInit, "signal">;
  timeoutMs: number;
  /** the caller's own abort: it ends the attempt and is thrown, not retried */
  signal?: AbortSignal;
  /** what a network error's message names (never a URL that holds a secret) */
  target: string;
  /** wait the answer's `Retry-After` before the next attempt @defaultValue false */
  honourRetryAfter?: boolean;
}

/** The API error of an answer that is not ok (or a stand-in for a body that is not one). */
export async function errorBody(res: Response): Promise<ApiErrorBody> {
  const text = await res.text();
  try {
    const parsed = JSON.parse(text) as { error?: ApiErrorBody };
    if (parsed.error && typeof parsed.error.code === "string") return parsed.error;
  } catch {
    // not an API error body (a proxy's page…)
  }
  const code = res.status === 429 ? "rate_limited" : res.status >= 500 ? "unavailable" : "invalid_request";
  return { code, message: `HTTP ${res.status}: ${text.slice(0, 200)}` };
}

/** A `Retry-After` header in ms (seconds or an HTTP date), or undefined. */
export function retryAfterMs(res: Response): number | undefined {
  const header = res.headers.get("retry-after");
  if (header === null) return undefined;
  const seconds = Number(header);
  if (Number.isFinite(seconds)) return Math.max(0, seconds * 1000);
  const at = Date.parse(header);
  return Number.isNaN(at) ? undefined : Math.max(0, at - Date.now());
}

export async function jsonAttempt(
  fetchFn: typeof fetch,
  a: JsonAttempt,
): Promise<Attempt<{ status: number; body: unknown }>> {
  let res: Response;
  try {
    const timeout = AbortSignal.timeout(a.timeoutMs);
    res = await fetchFn(a.url, { ...a.init, signal: a.signal ? AbortSignal.any([a.signal, timeout]) : timeout });
  } catch (cause) {
    if (a.signal?.aborted) throw cause; // the caller gave up: no retry
    return { done: false, error: new RendezvousNetworkError(`cannot reach ${a.target}`, { cause }) };
  }
  if (res.ok) return { done: true, value: { status: res.status, body: await res.json() } };
  const error = new RendezvousApiError(res.status, await errorBody(res));
  if (!isRetryableStatus(res.status)) throw error;
  return a.honourRetryAfter ? { done: false, error, retryAfterMs: retryAfterMs(res) } : { done: false, error };
}
