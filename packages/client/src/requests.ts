/**
 * The request shapes of HostClient's compound calls. One vocabulary across the
 * client: a wait is named with the fields of `POST /v1/waits` (docs/api.md, Waits) —
 * `runId`, `position`, `eventType`, `correlationId`, `timeoutMs` | `deadline`,
 * `since`, `metadata` — wherever a call registers one.
 */
import type { FailureError, WaitSpec } from "./wire.js";

/** The event type, by its API name; `event` is a deprecated alias, accepted as well. */
export type EventTypeField =
  | { eventType: string; event?: undefined }
  | {
      /** @deprecated use `eventType` (the field name of `POST /v1/waits`) */
      event: string;
      eventType?: undefined;
    };

/** A wait to register, in the fields of `POST /v1/waits`. */
export type WaitFields = Omit<WaitSpec, "eventType" | "externalJobId"> & EventTypeField;

/** `HostClient.waitFor`: the wait, and how often to look at it. */
export type WaitForRequest = WaitFields & {
  /** between two reads of the wait @defaultValue 200 */
  pollMs?: number;
};

/** `HostClient.launchAndWait`: the wait, and how to start the external job. */
export type LaunchAndWaitRequest = WaitFields & {
  /** starts the external job with `idempotencyKey` as its idempotency key; returns the job's id */
  launch: (ctx: { idempotencyKey: string; waitId: string }) => Promise<string>;
};

/** `HostClient.deliver` (docs/api.md, Direct delivery). */
export interface DeliverRequest {
  eventType: string;
  correlationId?: string;
  payload?: Record<string, unknown>;
  /** resolve every matching wait (else several matches answer `ambiguous`) */
  all?: boolean;
  /** the resolutions' outcome @defaultValue "success" */
  outcome?: "success" | "failure";
  /** a failure's error (only with outcome failure) */
  error?: FailureError;
}

/** The `POST /v1/waits` body of a request: the WaitSpec fields alone, `event` read as `eventType`. */
export function waitSpecOf(req: WaitFields): WaitSpec {
  const { event, eventType = event, runId, position, correlationId } = req as WaitFields & { event?: string };
  if (typeof eventType !== "string") throw new TypeError("a wait needs an eventType");
  if (event !== undefined && event !== eventType)
    throw new TypeError("eventType and its deprecated alias event disagree; give eventType only");
  const spec: WaitSpec = { runId, position, eventType, correlationId };
  if (req.timeoutMs !== undefined) spec.timeoutMs = req.timeoutMs;
  if (req.deadline !== undefined) spec.deadline = req.deadline;
  if (req.since !== undefined) spec.since = req.since;
  if (req.metadata !== undefined) spec.metadata = req.metadata;
  if (req.token !== undefined) spec.token = req.token;
  if (req.heartbeatMs !== undefined) spec.heartbeatMs = req.heartbeatMs;
  return spec;
}
