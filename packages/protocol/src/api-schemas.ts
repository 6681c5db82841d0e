/**
 * The answers of the HTTP API as zod schemas (docs/api.md): the error envelope, the
 * envelopes that put a resource under its name, and `errorResponses`, the error answers
 * a route declares. Each `.meta({ id })` names a component of the OpenAPI document
 * (`/openapi.json`); the host routes also serialize their answers with these schemas.
 */
import { z } from "zod";
import { type ErrorCode, errorCatalogue } from "./errors.js";
import { Consumption, EventInput, EventRecord, Wait } from "./schemas.js";

const codes = Object.keys(errorCatalogue) as [ErrorCode, ...ErrorCode[]];

/** An issue of a `400 invalid_request` / `invalid_event`: where the input is wrong, and why. */
export const Issue = z
  .looseObject({ path: z.array(z.union([z.string(), z.number()])), message: z.string() })
  .meta({ id: "Issue" });

/** Every error answer: `{"error": {"code", "message", ...details}}`. */
export const ErrorBody = z
  .object({
    error: z.looseObject({
      code: z.enum(codes).meta({ description: "the error's code (docs/api.md, Errors); more may be added" }),
      message: z.string(),
      issues: z.array(Issue).optional().meta({ description: "invalid_request, invalid_event: what is wrong" }),
      candidates: z.array(z.string()).optional().meta({ description: "ambiguous: the wait ids that match" }),
      reason: z.string().optional().meta({ description: "unavailable: redis_oom, redis_down, redis_timeout, …" }),
      retryAfter: z.number().optional().meta({ description: "rate_limited, unavailable: seconds (as Retry-After)" }),
    }),
  })
  .meta({ id: "Error", description: "An error answer; further details may be present" });

/** The error statuses a route may declare (docs/api.md, Errors). */
export const ERROR_STATUSES = [400, 401, 403, 404, 409, 413, 429, 503] as const;
export type ErrorStatus = (typeof ERROR_STATUSES)[number];

/** The error answers of a route, for its `schema.response`: `{ 401: ErrorBody, … }`. */
export function errorResponses<S extends ErrorStatus>(...statuses: S[]): Record<S, typeof ErrorBody> {
  const out = {} as Record<S, typeof ErrorBody>;
  for (const s of statuses) out[s] = ErrorBody;
  return out;
}

/** `{"wait": Wait}` */
export const WaitResponse = z.object({ wait: Wait }).meta({ id: "WaitResponse" });

/** The answer of `POST /v1/waits/{id}/consume`: `first` is true for exactly one caller. */
export const ConsumeResult = z
  .object({ first: z.boolean(), consumption: Consumption, wait: Wait })
  .meta({ id: "ConsumeResult" });
export type ConsumeResult = z.infer<typeof ConsumeResult>;
/** `{"event": EventRecord}` */
export const EventResponse = z.object({ event: EventRecord }).meta({ id: "EventResponse" });

/** `POST /v1/events`: `202 accepted` (stored) or `200 duplicate` (the original). */
export const PublishResult = z
  .object({ status: z.enum(["accepted", "duplicate"]), event: EventRecord })
  .meta({ id: "PublishResult" });

/** `POST /v1/events/batch` body. */
export const EventBatch = z.object({ events: z.array(EventInput).min(1).max(500) }).meta({ id: "EventBatch" });

/** One result of a batch, in the order of its events. */
export const BatchResult = z
  .union([
    PublishResult,
    z.object({ status: z.literal("rejected"), error: ErrorBody.shape.error }).meta({ id: "RejectedEvent" }),
  ])
  .meta({ id: "BatchResult" });
export const BatchResults = z.object({ results: z.array(BatchResult) }).meta({ id: "BatchResults" });
