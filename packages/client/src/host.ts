/**
 * A typed host client for the wait API (docs/api.md, Waits and Direct delivery): the
 * calls a workflow engine or agent runtime makes, and the reads operators make.
 */

import { jsonAttempt } from "./attempt.js";
import { type DeliverRequest, type LaunchAndWaitRequest, type WaitForRequest, waitSpecOf } from "./requests.js";
import { type RetryOptions, withRetry } from "./retry.js";
import { resultOf, type WaitResult } from "./tokens.js";
import { injectActive, otel } from "./tracing.js";
import type { EventRecord, Explanation, IssuedToken, Wait, WaitSpec, WaitState } from "./wire.js";

export type HostClientOptions = RetryOptions & {
  /** e.g. `http://127.0.0.1:8080` */
  baseUrl: string;
  /** a host key of the tenant, or the admin token */
  token: string;
  /** with the admin token: the tenant acted for (`?tenant=`) */
  tenant?: string;
  /** per-attempt timeout @defaultValue 10000 */
  timeoutMs?: number;
  /** @defaultValue globalThis.fetch */
  fetch?: typeof fetch;
};

export interface ListFilter {
  runId?: string;
  state?: WaitState;
  eventType?: string;
  correlationId?: string;
  limit?: number;
  cursor?: string;
}

/** One continuation leased over HTTP (docs/api.md, Continuations over HTTP). */
export interface ContinuationLease {
  /** opaque; names the lease in ack and extend */
  leaseId: string;
  waitId: string;
  /** 1 on the first lease, + 1 each time an expired lease hands it out again */
  attempt: number;
  leaseExpiresAt: string;
  wait: Wait;
  /** with `consume: true` in the claim: the consume done for the claimer (`wait` is the wait as consumed) */
  consumed?: { first: boolean; consumption: { by: string; at: string } };
  /** the continuation's trace context (W3C), when it has one */
  traceparent?: string;
  tracestate?: string;
}

export interface ClaimRequest {
  /** the claiming worker's name (for logs) */
  worker: string;
  /** 1–100 @defaultValue 10 */
  max?: number;
  /** 1000–600000 @defaultValue 30000 */
  leaseMs?: number;
  /** long poll, 0–20000 @defaultValue 0 */
  waitMs?: number;
  /**
   * a named group of the tenant's `continuationGroups` (its own queue); absent = the
   * tenant's other continuations. An unknown group answers `400 invalid_request`.
   */
  group?: string;
  /**
   * consume each leased wait as `worker` in the claim (each lease then carries `consumed`,
   * unless its consume could not be done) @defaultValue false
   */
  consume?: boolean;
}

export interface ConsumeResult {
  first: boolean;
  consumption: { by: string; at: string };
  wait: Wait;
}

/** Retrying is safe for every call here: each is idempotent or a read (consume records the first claimer once). */
export class HostClient {
  readonly #opts: HostClientOptions;
  readonly #fetch: typeof fetch;
  readonly #base: string;

  constructor(opts: HostClientOptions) {
    this.#opts = opts;
    this.#fetch = opts.fetch ?? globalThis.fetch;
    this.#base = opts.baseUrl.replace(/\/+$/, "");
  }

  /**
   * Registers a wait; `created` is false when the same (runId, position) was registered
   * before. With `token: true`, a new wait's answer carries its completion token (once).
   */
  async registerWait(spec: WaitSpec): Promise<{ created: boolean; wait: Wait; token?: IssuedToken }> {
    const { status, body } = await this.#call("POST", "/v1/waits", spec, true);
    const { wait, token } = body as { wait: Wait; token?: IssuedToken };
    return token === undefined ? { created: status === 201, wait } : { created: status === 201, wait, token };
  }

  async getWait(waitId: string): Promise<Wait> {
    return ((await this.#call("GET", `/v1/waits/${encodeURIComponent(waitId)}`)).body as { wait: Wait }).wait;
  }

  async listWaits(filter: ListFilter = {}): Promise<{ waits: Wait[]; nextCursor: string | null }> {
    const q = new URLSearchParams();
    for (const [k, v] of Object.entries(filter)) if (v !== undefined) q.set(k, String(v));
    return (await this.#call("GET", `/v1/waits?${q}`, undefined, true)).body as {
      waits: Wait[];
      nextCursor: string | null;
    };
  }

  async attachJob(waitId: string, externalJobId: string): Promise<Wait> {
    const path = `/v1/waits/${encodeURIComponent(waitId)}`;
    return ((await this.#call("PATCH", path, { externalJobId })).body as { wait: Wait }).wait;
  }

  async cancel(waitId: string): Promise<Wait> {
    return ((await this.#call("DELETE", `/v1/waits/${encodeURIComponent(waitId)}`)).body as { wait: Wait }).wait;
  }

  async explain(waitId: string): Promise<Explanation> {
    return (await this.#call("GET", `/v1/waits/${encodeURIComponent(waitId)}/explain`)).body as Explanation;
  }

  async consume(waitId: string, worker: string): Promise<ConsumeResult> {
    const path = `/v1/waits/${encodeURIComponent(waitId)}/consume`;
    return (await this.#call("POST", path, { worker })).body as ConsumeResult;
  }

  /**
   * Leases up to `max` continuations of the tenant; with `waitMs` a long poll that answers
   * as soon as one is there. Each lease ends with `ackContinuation`, or expires and the
   * continuation is handed out again. (A retried claim whose first answer was lost leaves
   * those leases to expire: delivery is at least once, `consume` is the once.)
   */
  async claimContinuations(req: ClaimRequest, opts: { signal?: AbortSignal } = {}): Promise<ContinuationLease[]> {
    const timeoutMs = (this.#opts.timeoutMs ?? 10_000) + (req.waitMs ?? 0);
    const { body } = await this.#call("POST", "/v1/continuations/claim", req, true, { timeoutMs, signal: opts.signal });
    return (body as { continuations: ContinuationLease[] }).continuations;
  }

  /** The continuation is done; throws `lease_expired` (409) when the lease is gone. */
  async ackContinuation(leaseId: string): Promise<void> {
    await this.#call("POST", `/v1/continuations/${encodeURIComponent(leaseId)}/ack`, undefined, true);
  }

  /** Acknowledges up to 100 leases in one request: those done (`acked`) and those gone (`expired`). */
  async ackContinuations(leaseIds: string[]): Promise<{ acked: string[]; expired: string[] }> {
    const { body } = await this.#call("POST", "/v1/continuations/ack", { leaseIds }, true);
    return body as { acked: string[]; expired: string[] };
  }

  /** Extends a lease to `leaseMs` from now; the new expiry (ISO). */
  async extendContinuationLease(leaseId: string, leaseMs?: number): Promise<string> {
    const path = `/v1/continuations/${encodeURIComponent(leaseId)}/extend`;
    const { body } = await this.#call("POST", path, leaseMs === undefined ? {} : { leaseMs }, true);
    return (body as { leaseExpiresAt: string }).leaseExpiresAt;
  }

  async deliver(req: DeliverRequest): Promise<{ delivered: string[]; matched: number }> {
    return (await this.#call("POST", "/v1/deliver", req, true)).body as { delivered: string[]; matched: number };
  }

  /**
   * Registers a wait and polls until it settles: the payload of the event (or
   * delivery) that resolved it, or null when it timed out or was cancelled — the
   * `waitForEvent` shape. For a process that can stay alive; a durable run instead
   * registers and takes its continuation from a ContinuationWorker.
   */
  async waitFor(req: WaitForRequest): Promise<Record<string, unknown> | null> {
    const wait = await this.waitForSettled(req);
    const r = wait.resolution;
    if (wait.state !== "resolved" || !r) return null;
    return r.event?.payload ?? r.payload ?? {};
  }

  /**
   * Registers a wait and polls until it settles; the settled wait. The shapes read best
   * this way: `waitForSettled({ anyOf: [...], failureTypes })` tells by
   * `resolution.eventType` and `resolution.outcome` which type won, and
   * `waitForSettled({ eventType, count: 3 })` lists the N events in `resolution.events`
   * (those collected when it timed out). `waitFor` with the same fields gives the payload
   * of the event that completed the wait.
   */
  async waitForSettled(req: WaitForRequest): Promise<Wait> {
    let { wait } = await this.registerWait(waitSpecOf(req));
    while (wait.state === "waiting") {
      await new Promise((r) => setTimeout(r, req.pollMs ?? 200));
      wait = await this.getWait(wait.id);
    }
    return wait;
  }

  /**
   * Registers the wait FIRST, then launches the external job with the correlation id
   * as its idempotency key, then attaches the job id. Safe to re-run after a crash
   * at any line: registering again names the same wait; a wait that already has a
   * job id (or has settled) is not launched again; a crash between launch and attach
   * re-launches with the same idempotency key, which the job's system deduplicates.
   */
  async launchAndWait(req: LaunchAndWaitRequest): Promise<Wait> {
    const { wait } = await this.registerWait(waitSpecOf(req));
    if (wait.state !== "waiting" || wait.externalJobId) return wait;
    const jobId = await req.launch({ idempotencyKey: req.correlationId, waitId: wait.id });
    return this.attachJob(wait.id, jobId);
  }

  // --- completion tokens, heartbeats, outcomes (docs/api.md, "Completion tokens, failure and heartbeats")

  /** A new completion token for a waiting wait (the previous one is invalid from then on). */
  async createToken(waitId: string): Promise<IssuedToken> {
    const path = `/v1/waits/${encodeURIComponent(waitId)}/token`;
    return ((await this.#call("POST", path)).body as { token: IssuedToken }).token;
  }

  /** A heartbeat by the host: the wait's deadline becomes now + its heartbeatMs. */
  async heartbeat(waitId: string): Promise<Wait> {
    const path = `/v1/waits/${encodeURIComponent(waitId)}/heartbeat`;
    return ((await this.#call("POST", path, {})).body as { wait: Wait }).wait;
  }

  /**
   * As `waitFor`, resolving to how the wait ended: `success` (with the payload),
   * `failure` (with the error), `timed_out` or `cancelled`. Nothing is thrown for a timeout.
   */
  async waitForResult(req: WaitForRequest): Promise<WaitResult> {
    let { wait } = await this.registerWait(waitSpecOf(req));
    for (;;) {
      const result = resultOf(wait);
      if (result) return result;
      await new Promise((r) => setTimeout(r, req.pollMs ?? 200));
      wait = await this.getWait(wait.id);
    }
  }

  async getEvent(producer: string, eventId: string): Promise<EventRecord> {
    const path = `/v1/events/${encodeURIComponent(producer)}/${encodeURIComponent(eventId)}`;
    return ((await this.#call("GET", path, undefined, true)).body as { event: EventRecord }).event;
  }

  async #call(
    method: string,
    path: string,
    body?: unknown,
    tenantScoped = false,
    call: { timeoutMs?: number; signal?: AbortSignal } = {},
  ): Promise<{ status: number; body: unknown }> {
    const timeoutMs = call.timeoutMs ?? this.#opts.timeoutMs ?? 10_000;
    let url = `${this.#base}${path}`;
    if (tenantScoped && this.#opts.tenant)
      url += `${url.includes("?") ? "&" : "?"}tenant=${encodeURIComponent(this.#opts.tenant)}`;
    const headers: Record<string, string> = { authorization: `Bearer ${this.#opts.token}` };
    if (body !== undefined) headers["content-type"] = "application/json";
    // the caller's trace context, when @opentelemetry/api is installed (docs/api.md, Tracing in the client)
    injectActive(await otel(), headers);
    const init = { method, headers, body: body === undefined ? undefined : JSON.stringify(body) };
    return withRetry(
      () => jsonAttempt(this.#fetch, { url, init, timeoutMs, signal: call.signal, target: url }),
      this.#opts,
    );
  }
}
