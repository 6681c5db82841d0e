/**
 * The wire types of docs/api.md as plain TypeScript: what the client sends and reads.
 * The server derives the same shapes from its zod schemas (`@rendezvous/protocol`); the
 * client keeps its own copy so that its published types need no other package (no
 * zod, no engine). `test/wire-types.test.ts` checks both ways that each type here
 * equals the protocol's, so `npm run typecheck` fails the moment they drift.
 */

/** A JSON object as sent or stored (`payload`, `metadata`). */
export type JsonObject = Record<string, unknown>;

/** The event envelope a producer sends (docs/api.md, Events). */
export interface EventInput {
  /** unique per tenant and producer: the dedup key (1–200) */
  id: string;
  /** `^[a-z0-9][a-z0-9._-]{0,127}$` */
  type: string;
  /** 1–256 */
  correlationId: string;
  /** ISO time of the fact (set once; not a send time) */
  occurredAt?: string | undefined;
  payload?: JsonObject | undefined;
}

/** The body of `POST /v1/waits` (docs/api.md, Waits). */
export interface WaitSpec {
  runId: string;
  position: string;
  /** one event type; or `eventTypes` instead */
  eventType?: string | undefined;
  /** any-of: 1–16 distinct types, instead of `eventType` (docs/api.md, Wait shapes) */
  eventTypes?: string[] | undefined;
  correlationId: string;
  /** give `timeoutMs` or `deadline`, not both */
  timeoutMs?: number | undefined;
  /** ISO time */
  deadline?: string | undefined;
  /** ISO time: events accepted since then may resolve the wait */
  since?: string | undefined;
  externalJobId?: string | undefined;
  metadata?: JsonObject | undefined;
  /** resolve when N distinct events have matched (1–100, default 1) */
  count?: number | undefined;
  /** the `eventTypes` that mean failure (`resolution.outcome`) */
  failureTypes?: string[] | undefined;
  /** ask for a completion token (not part of the definition): the 201 answer carries it once */
  token?: boolean | undefined;
  /** each accepted heartbeat sets deadline = now + heartbeatMs (part of the definition) */
  heartbeatMs?: number | undefined;
}

export type WaitState = "waiting" | "resolved" | "timed_out" | "cancelled";

export type ResolutionKind = "event" | "timeout" | "cancel" | "deliver" | "token";

/** How a resolution ended for the run (kinds event, deliver, token). */
export type Outcome = "success" | "failure";

/** The error object of a failure (token fail, deliver with outcome failure). */
export interface FailureError {
  /** 1–2000 */
  message: string;
  /** 1–200 */
  code?: string | undefined;
  details?: JsonObject | undefined;
}

/** A reference to an accepted event. */
export interface EventRef {
  producer: string;
  id: string;
  acceptedAt: string;
  streamId: string;
}

/** The event that resolved a wait. */
export interface ResolvingEvent extends EventRef {
  payload: JsonObject | null;
}

/** An event a shaped wait collected (docs/api.md, Wait shapes). */
export interface CollectedEvent extends EventRef {
  type: string;
}

/** An event of a shaped wait's resolution: with its payload (kind `event`). */
export interface ResolutionEvent extends CollectedEvent {
  payload?: JsonObject | null | undefined;
}

export interface Resolution {
  kind: ResolutionKind;
  at: string;
  /** the resolving event (kind `event`): its reference and payload */
  event?: ResolvingEvent | undefined;
  /** the deadline that passed (kind `timeout`) */
  deadline?: string | undefined;
  /** the delivered payload (kinds `deliver` and `token`) */
  payload?: JsonObject | null | undefined;
  /** the resolving event's type (kind `event` of a shaped wait) */
  eventType?: string | undefined;
  /** a shaped wait's events in accepted order (kind `event`: with their payloads; `timeout`: those collected) */
  events?: ResolutionEvent[] | undefined;
  /** success or failure (kinds `event`, `deliver`, `token`) */
  outcome?: Outcome | undefined;
  /** the error given with a failure */
  error?: JsonObject | null | undefined;
}

export type HistoryWhat =
  | "registered"
  | "job_attached"
  | "resolved"
  | "late_event"
  | "duplicate_ignored"
  | "continuation_dispatched"
  | "consumed"
  | "sweeper_rescheduled"
  | "collected"
  | "token_issued"
  | "heartbeat";

/** One timeline entry; entries carry more fields per `what`. */
export interface HistoryEntry {
  at: string;
  what: HistoryWhat;
  [field: string]: unknown;
}

export interface Consumption {
  by: string;
  at: string;
}

/** A wait as the API shows it. */
export interface Wait {
  id: string;
  tenant: string;
  runId: string;
  position: string;
  eventType: string;
  correlationId: string;
  state: WaitState;
  createdAt: string;
  deadline: string | null;
  since: string | null;
  externalJobId: string | null;
  metadata: JsonObject | null;
  resolution: Resolution | null;
  consumption: Consumption | null;
  lateEvents: EventRef[];
  history: HistoryEntry[];
  /** shaped waits only (docs/api.md, Wait shapes) */
  eventTypes?: string[] | undefined;
  count?: number | undefined;
  failureTypes?: string[] | undefined;
  collected?: CollectedEvent[] | undefined;
  /** when the current completion token was issued; null: none was */
  token: { issuedAt: string } | null;
  /** heartbeats of a wait registered with heartbeatMs; null otherwise */
  heartbeat: { intervalMs: number; count: number; lastAt: string | null } | null;
}

/** A completion token as issued (shown once): its value, and its complete URL when the server has `publicUrl`. */
export interface IssuedToken {
  value: string;
  url?: string | undefined;
}

export type EventStatus = "pending" | "matched" | "buffered" | "late" | "expired";

/** An accepted event as `GET /v1/events/{producer}/{eventId}` shows it. */
export interface EventRecord {
  id: string;
  tenant: string;
  producer: string;
  type: string;
  correlationId: string;
  occurredAt: string | null;
  acceptedAt: string;
  streamId: string;
  status: EventStatus;
  matchedWaits: string[];
  lateFor: string[];
}

export type Verdict =
  | "resolved"
  | "timed_out"
  | "cancelled"
  | "backlog"
  | "correlation_mismatch"
  | "rejected_signal"
  | "no_signal";

/** The answer of `GET /v1/waits/{id}/explain`. */
export interface Explanation {
  state: WaitState;
  verdict: Verdict;
  details: Record<string, unknown>;
}

/** Every error code of docs/api.md (Errors). */
export type ErrorCode =
  | "unauthorized"
  | "rate_limited"
  | "forbidden_event_type"
  | "not_found"
  | "invalid_request"
  | "invalid_event"
  | "payload_too_large"
  | "event_id_conflict"
  | "wait_conflict"
  | "ambiguous"
  | "not_waiting"
  | "not_resolved"
  | "lease_expired"
  | "quota_exceeded"
  | "token_invalid"
  | "deadline_passed"
  | "heartbeat_disabled"
  | "already_exists"
  | "tenant_has_waits"
  | "retry_not_allowed"
  | "unavailable"
  | "invalid_config"
  | "internal";
