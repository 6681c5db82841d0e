import { z } from "zod";

/** Identifier of a tenant or producer (also used in queue names). */
export const Name = z
  .string()
  .regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/, "letters, digits, . _ - (1–64, starting alphanumeric)");
/** An event type: `^[a-z0-9][a-z0-9._-]{0,127}$`. */
export const EventType = z.string().regex(/^[a-z0-9][a-z0-9._-]{0,127}$/, "lowercase letters, digits, . _ - (1–128)");
export const CorrelationId = z.string().min(1).max(256);
const IsoTime = z.iso.datetime({ offset: true });
const JsonObject = z.record(z.string(), z.unknown());

/** The event envelope a producer sends (API.md, Events). */
export const EventInput = z.strictObject({
  id: z.string().min(1).max(200),
  type: EventType,
  correlationId: CorrelationId,
  occurredAt: IsoTime.optional(),
  payload: JsonObject.optional(),
});
export type EventInput = z.infer<typeof EventInput>;

/** The body of `POST /v1/waits`. */
export const WaitSpec = z
  .strictObject({
    runId: z.string().min(1).max(200),
    position: z.string().min(1).max(200),
    eventType: EventType,
    correlationId: CorrelationId,
    timeoutMs: z.int().positive().max(Number.MAX_SAFE_INTEGER).optional(),
    deadline: IsoTime.optional(),
    since: IsoTime.optional(),
    externalJobId: z.string().min(1).max(200).optional(),
    metadata: JsonObject.optional(),
  })
  .refine((w) => !(w.timeoutMs !== undefined && w.deadline !== undefined), {
    message: "give timeoutMs or deadline, not both",
    path: ["deadline"],
  });
export type WaitSpec = z.infer<typeof WaitSpec>;

export const WaitState = z.enum(["waiting", "resolved", "timed_out", "cancelled"]);
export type WaitState = z.infer<typeof WaitState>;

export const ResolutionKind = z.enum(["event", "timeout", "cancel", "deliver"]);
export type ResolutionKind = z.infer<typeof ResolutionKind>;

/** A reference to an accepted event. */
export const EventRef = z.object({
  producer: z.string(),
  id: z.string(),
  acceptedAt: z.string(),
  streamId: z.string(),
});
export type EventRef = z.infer<typeof EventRef>;

export const Resolution = z.object({
  kind: ResolutionKind,
  at: z.string(),
  /** the resolving event (kind `event`) */
  event: EventRef.extend({ payload: JsonObject.nullable() }).optional(),
  /** the deadline that passed (kind `timeout`) */
  deadline: z.string().optional(),
  /** the delivered payload (kind `deliver`) */
  payload: JsonObject.nullable().optional(),
});
export type Resolution = z.infer<typeof Resolution>;

export const HistoryWhat = z.enum([
  "registered",
  "job_attached",
  "resolved",
  "late_event",
  "duplicate_ignored",
  "continuation_dispatched",
  "consumed",
  "sweeper_rescheduled",
]);
export type HistoryWhat = z.infer<typeof HistoryWhat>;

export const HistoryEntry = z.looseObject({ at: z.string(), what: HistoryWhat });
export type HistoryEntry = z.infer<typeof HistoryEntry>;

export const Consumption = z.object({ by: z.string(), at: z.string() });
export type Consumption = z.infer<typeof Consumption>;

/** A wait as the API shows it. */
export const Wait = z.object({
  id: z.string(),
  tenant: z.string(),
  runId: z.string(),
  position: z.string(),
  eventType: z.string(),
  correlationId: z.string(),
  state: WaitState,
  createdAt: z.string(),
  deadline: z.string().nullable(),
  since: z.string().nullable(),
  externalJobId: z.string().nullable(),
  metadata: JsonObject.nullable(),
  resolution: Resolution.nullable(),
  consumption: Consumption.nullable(),
  lateEvents: z.array(EventRef),
  history: z.array(HistoryEntry),
});
export type Wait = z.infer<typeof Wait>;

export const EventStatus = z.enum(["pending", "matched", "buffered", "late", "expired"]);
export type EventStatus = z.infer<typeof EventStatus>;

/** An accepted event as `GET /v1/events/{producer}/{eventId}` shows it. */
export const EventRecord = z.object({
  id: z.string(),
  tenant: z.string(),
  producer: z.string(),
  type: z.string(),
  correlationId: z.string(),
  occurredAt: z.string().nullable(),
  acceptedAt: z.string(),
  streamId: z.string(),
  status: EventStatus,
  matchedWaits: z.array(z.string()),
  lateFor: z.array(z.string()),
});
export type EventRecord = z.infer<typeof EventRecord>;
