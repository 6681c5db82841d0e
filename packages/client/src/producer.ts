/**
 * A typed producer client: signs (or keys) each request, retries what is safe to
 * retry, and answers typed results or throws a typed error with the API code.
 */

import { jsonAttempt } from "./attempt.js";
import type { ApiErrorBody } from "./errors.js";
import { type Attempt, type RetryOptions, withRetry } from "./retry.js";
import { signatureHeader } from "./signing.js";
import { injectActive, otel } from "./tracing.js";
import type { EventInput, EventRecord } from "./wire.js";

/** Credentials: an HMAC secret (the request is signed) or a bearer key. */
export type ProducerCredential = { secret: string; key?: undefined } | { key: string; secret?: undefined };

export type ProducerClientOptions = ProducerCredential &
  RetryOptions & {
    /** e.g. `http://127.0.0.1:8080` (no trailing path) */
    baseUrl: string;
    tenant: string;
    /** the producer id inside the tenant (`billing`) */
    producer: string;
    /** per-attempt timeout @defaultValue 10000 */
    timeoutMs?: number;
    /** @defaultValue globalThis.fetch */
    fetch?: typeof fetch;
    /** clock for signature timestamps, ms @defaultValue Date.now */
    now?: () => number;
  };

/** The answer to one published event. */
export type PublishResult = { status: "accepted" | "duplicate"; event: EventRecord };

/** The answer for one event of a batch, in order. */
export type BatchResult =
  | { status: "accepted" | "duplicate"; event: EventRecord }
  | { status: "rejected"; error: ApiErrorBody };

/** Most events in one batch (docs/api.md). */
export const MAX_BATCH = 500;

export class ProducerClient {
  readonly #opts: ProducerClientOptions;
  readonly #fetch: typeof fetch;
  readonly #base: string;

  constructor(opts: ProducerClientOptions) {
    if (!opts.secret && !opts.key) throw new TypeError("ProducerClient needs a secret or a key");
    this.#opts = opts;
    this.#fetch = opts.fetch ?? globalThis.fetch;
    this.#base = opts.baseUrl.replace(/\/+$/, "");
  }

  /**
   * Publishes one event: `accepted` (202) or `duplicate` (200, the original event).
   * @throws RendezvousApiError with the API code (`invalid_event`, `event_id_conflict`, …)
   * @throws RendezvousNetworkError when the API stayed unreachable through the retries
   */
  async publish(event: EventInput): Promise<PublishResult> {
    return (await this.#post("/v1/events", JSON.stringify(event))) as PublishResult;
  }

  /**
   * Publishes up to 500 events in one request; one result per event, in order
   * (a refused event is a `rejected` result, not an exception).
   * @throws RendezvousApiError when the request itself is refused (`unauthorized`, `payload_too_large`, …)
   */
  async publishBatch(events: EventInput[]): Promise<BatchResult[]> {
    if (events.length > MAX_BATCH) throw new RangeError(`a batch holds at most ${MAX_BATCH} events`);
    const body = (await this.#post("/v1/events/batch", JSON.stringify({ events }))) as { results: BatchResult[] };
    return body.results;
  }

  #headers(rawBody: string): Record<string, string> {
    const headers: Record<string, string> = {
      "content-type": "application/json",
      "rendezvous-producer": `${this.#opts.tenant}/${this.#opts.producer}`,
    };
    if (this.#opts.secret) {
      // signed afresh on every attempt: the timestamp must stay within 300 s
      headers["rendezvous-signature"] = signatureHeader(this.#opts.secret, rawBody, (this.#opts.now ?? Date.now)());
    } else {
      headers.authorization = `Bearer ${this.#opts.key}`;
    }
    return headers;
  }

  async #post(path: string, rawBody: string): Promise<unknown> {
    const url = `${this.#base}${path}`;
    const timeoutMs = this.#opts.timeoutMs ?? 10_000;
    // the caller's trace context (not signed: the signature covers the body alone)
    const trace: Record<string, string> = {};
    injectActive(await otel(), trace);
    return withRetry(async (): Promise<Attempt<unknown>> => {
      const a = await jsonAttempt(this.#fetch, {
        url,
        init: { method: "POST", headers: { ...this.#headers(rawBody), ...trace }, body: rawBody },
        timeoutMs,
        target: url,
        honourRetryAfter: true,
      });
      return a.done ? { done: true, value: a.value.body } : a;
    }, this.#opts);
  }
}
