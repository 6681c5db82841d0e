/**
 * The one error catalogue of rendezvous. Every code reachable over HTTP is an
 * docs/api.md code with its status; a test checks the catalogue and docs/api.md agree.
 */
export const errorCatalogue = {
  /** thrown when a credential is missing, unknown or its signature does not verify */
  unauthorized: { status: 401, message: "unauthorized" },
  /** thrown when a producer exceeds its configured rate */
  rate_limited: { status: 429, message: "rate limit exceeded" },
  /** thrown when a tenant is at its waitingWaits or bufferedEvents quota */
  quota_exceeded: { status: 429, message: "quota exceeded" },
  /** thrown when a producer sends an event type it is not allowed to send */
  forbidden_event_type: { status: 403, message: "event type not allowed for this producer" },
  /** thrown when a wait or event does not exist, is malformed or belongs to another tenant */
  not_found: { status: 404, message: "not found" },
  /** thrown when a host request body or query breaks its schema */
  invalid_request: { status: 400, message: "invalid request" },
  /** thrown when an event is not valid JSON, breaks the envelope or its payload schema */
  invalid_event: { status: 400, message: "invalid event" },
  /** thrown when a body exceeds maxPayloadBytes */
  payload_too_large: { status: 413, message: "payload too large" },
  /** thrown when an event id is re-used with other content */
  event_id_conflict: { status: 409, message: "event id already used with other content" },
  /** thrown when (runId, position) is registered again with another definition */
  wait_conflict: { status: 409, message: "run position already waits with another definition" },
  /** thrown when a direct delivery matches several waits and `all` was not asked */
  ambiguous: { status: 409, message: "several waits match; narrow by correlationId or pass all: true" },
  /** thrown when a transition needs a `waiting` wait and it has settled */
  not_waiting: { status: 409, message: "wait is not waiting" },
  /** thrown when consume is called on a wait that is still waiting */
  not_resolved: { status: 409, message: "wait is not resolved yet" },
  /** thrown when a continuation lease is acked or extended after it expired, was acked, or is another tenant's */
  lease_expired: { status: 409, message: "the continuation lease has expired" },
  /** thrown when a completion token is malformed, unknown, rotated away, or its wait is gone */
  token_invalid: { status: 404, message: "unknown completion token" },
  /** thrown when a token completion, failure or heartbeat comes after the wait's deadline (its timeout is due) */
  deadline_passed: { status: 409, message: "the wait's deadline has passed" },
  /** thrown when a heartbeat names a wait registered without heartbeatMs */
  heartbeat_disabled: { status: 409, message: "the wait takes no heartbeats (registered without heartbeatMs)" },
  /** thrown when the admin creates a tenant or producer whose name is in use */
  already_exists: { status: 409, message: "already exists" },
  /** thrown when the admin deletes a tenant that has waiting waits without `force` */
  tenant_has_waits: { status: 409, message: "the tenant has waiting waits; pass ?force=true to delete it anyway" },
  /** thrown when Bull Board is asked to re-run completed jobs of a continuation queue (a compacted job holds no Wait) */
  retry_not_allowed: {
    status: 409,
    message: "completed continuation jobs are not re-run: read or register the wait instead",
  },
  /** thrown when Redis or a role is not reachable */
  unavailable: { status: 503, message: "service unavailable" },
  /** thrown when a config file or the environment is invalid (startup only, never HTTP) */
  invalid_config: { status: 500, message: "invalid configuration" },
  /** thrown when a Lua reply does not have the shape its header promises (a bug) */
  internal: { status: 500, message: "internal error" },
} as const;

export type ErrorCode = keyof typeof errorCatalogue;

/** A typed rendezvous error: a stable `code`, its HTTP status and context fields. */
export class RendezvousError extends Error {
  readonly code: ErrorCode;
  readonly statusCode: number;
  readonly details: Readonly<Record<string, unknown>>;

  constructor(code: ErrorCode, message?: string, details: Record<string, unknown> = {}) {
    super(message ?? errorCatalogue[code].message);
    this.name = "RendezvousError";
    this.code = code;
    this.statusCode = errorCatalogue[code].status;
    this.details = details;
  }

  /** The docs/api.md error body. */
  toJSON(): { error: { code: ErrorCode; message: string } & Record<string, unknown> } {
    return { error: { code: this.code, message: this.message, ...this.details } };
  }
}

export function isRendezvousError(value: unknown, code?: ErrorCode): value is RendezvousError {
  return value instanceof RendezvousError && (code === undefined || value.code === code);
}
