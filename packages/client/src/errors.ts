import type { ErrorCode } from "./wire.js";

/** One `{path, message}` of an `invalid_event` / `invalid_request` answer. */
export interface ApiIssue {
  path: Array<string | number>;
  message: string;
}

/** The `error` member of an API error body. */
export interface ApiErrorBody {
  code: ErrorCode;
  message: string;
  issues?: ApiIssue[];
  [detail: string]: unknown;
}

/** Thrown when the API answers with an error (after retries, for 429 and 5xx). */
export class RendezvousApiError extends Error {
  /** the API error code (`invalid_event`, `unauthorized`, …) */
  readonly code: ErrorCode;
  /** the HTTP status */
  readonly status: number;
  /** `issues` of a validation error */
  readonly issues: ApiIssue[] | undefined;
  /** the whole `error` member, with any other details */
  readonly body: ApiErrorBody;

  constructor(status: number, body: ApiErrorBody) {
    super(`${body.code}: ${body.message}`);
    this.name = "RendezvousApiError";
    this.status = status;
    this.code = body.code;
    this.issues = body.issues;
    this.body = body;
  }
}

/** Thrown when the API could not be reached (after retries); `cause` is the last failure. */
export class RendezvousNetworkError extends Error {
  constructor(message: string, options: { cause: unknown }) {
    super(message, options);
    this.name = "RendezvousNetworkError";
  }
}

/** Whether an API error is worth retrying: rate limited or a server fault. */
export function isRetryableStatus(status: number): boolean {
  return status === 429 || status >= 500;
}
