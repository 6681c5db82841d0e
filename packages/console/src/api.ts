/**
 * The console's calls: the token (admin token or host key) kept in sessionStorage,
 * sent as `Authorization: Bearer`, and the API error envelope turned into an
 * `ApiError` with its code.
 */

import type { RecentRejection, Rejection } from "@rendezvous/engine";
import type { EventRecord, EventRef, NearMiss, Wait, WaitState } from "@rendezvous/protocol";

const TOKEN_KEY = "rendezvous.console.token";

export function getToken(): string | null {
  return sessionStorage.getItem(TOKEN_KEY);
}

export function setToken(token: string | null): void {
  if (token === null) sessionStorage.removeItem(TOKEN_KEY);
  else sessionStorage.setItem(TOKEN_KEY, token);
}

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details: Record<string, unknown> = {},
  ) {
    super(message);
  }
}

export async function call<T>(method: string, path: string, body?: unknown): Promise<T> {
  const headers: Record<string, string> = {};
  const token = getToken();
  if (token) headers.authorization = `Bearer ${token}`;
  if (body !== undefined) headers["content-type"] = "application/json";
  const res = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await res.text();
  let json: unknown = null;
  try {
    json = text ? JSON.parse(text) : null;
  } catch {
    // not JSON
  }
  if (!res.ok) {
    const err = (json as { error?: { code?: string; message?: string } } | null)?.error;
    throw new ApiError(res.status, err?.code ?? "error", err?.message ?? res.statusText, (err ?? {}) as never);
  }
  return json as T;
}

export const get = <T>(path: string) => call<T>("GET", path);

/** `?a=1&b=2` from the defined entries (empty string when none). */
export function query(params: Record<string, string | number | undefined | null>): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null && v !== "") q.set(k, String(v));
  const s = q.toString();
  return s ? `?${s}` : "";
}

// ---------------------------------------------------------------- shapes (docs/api.md)

// The API's own types, from the protocol and engine packages (type-only: nothing of them reaches the bundle).
export type { EventRecord, EventRef, NearMiss, RecentRejection, Rejection, Wait, WaitState };

export interface Explanation {
  state: WaitState;
  verdict: string;
  details: {
    expects?: { eventType: string; correlationId: string; since?: string | null };
    deadline?: string | null;
    backlog?: {
      partition: number;
      undelivered: number;
      pending: number;
      oldestUnprocessedAt: string | null;
      oldestUnprocessedAgeMs: number | null;
    };
    rejections?: Rejection[];
    nearMisses?: NearMiss[];
    /** a wait registered with heartbeatMs; overdue: still waiting past its deadline */
    heartbeat?: { intervalMs: number; count: number; lastAt: string | null; deadline: string | null; overdue: boolean };
  } & Record<string, unknown>;
}

/** A row of the console's waits listing: the wait's own fields, and how it was resolved. */
export type WaitRow = Pick<
  Wait,
  "id" | "tenant" | "runId" | "position" | "eventType" | "correlationId" | "state" | "createdAt" | "deadline"
> & { resolvedBy: string | null };

export interface Session {
  identity: { kind: "admin" | "host"; tenant: string | null };
  tenants: string[];
  board: string | null;
}

export interface Overview {
  at: string;
  tenants: Array<{ tenant: string; waiting: number; settled: number }>;
  overdue: number | null;
  /** null for a host key: the partitions are shared by every tenant */
  partitions: Array<{
    partition: number;
    undelivered: number;
    pending: number;
    oldestUnprocessedAgeMs: number | null;
  }> | null;
  series: Array<{
    at: string;
    accepted: number;
    duplicate: number;
    rejected: number | null;
    latenessMs: number | null;
  }>;
  totals: {
    accepted: number;
    duplicate: number;
    rejected: number | null;
    rejectedByReason: Record<string, number> | null;
    timeoutsFired: number;
    latenessMeanMs: number | null;
    resolutions: Record<string, number>;
  };
  /** null for a host key: the request counter is the api process's */
  http: HttpFigures | null;
  /** null when the process knows no queues or could not read them */
  queues: QueueFigures | null;
}

export interface HttpFigures {
  series: Array<{ at: string; requests: number; clientErrors: number; serverErrors: number }>;
  recent: {
    seconds: number;
    requestsPerSec: number;
    clientErrorsPerSec: number;
    serverErrorsPerSec: number;
    clientErrorShare: number | null;
    serverErrorShare: number | null;
  };
  totals: { requests: number; clientErrors: number; serverErrors: number };
}

export interface QueueDepth {
  waiting: number;
  active: number;
  delayed: number;
  failed: number;
  oldestWaitingAgeMs: number | null;
}

export interface QueueFigures {
  continuations: QueueDepth & { queues: number };
  /** null for a host key and when the admin names a tenant: shared by every tenant */
  webhooks: QueueDepth | null;
  timeouts: QueueDepth | null;
  busiest: Array<QueueDepth & { queue: string }>;
}

export interface JobInfo {
  queue: string;
  jobId: string;
  job: null | {
    state: string;
    attemptsMade: number;
    createdAt: string | null;
    processedAt: string | null;
    finishedAt: string | null;
    failedReason: string | null;
  };
  board: string | null;
}
