import { z } from "zod";

/** Identifier of a tenant or producer (also used in queue names). */
export const Name = z
  .string()
  .regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/, "letters, digits, . _ - (1–64, starting alphanumeric)");
/** An event type: `^[a-z0-9][a-z0-9._-]{0,127}$`. */
export const EventType = z.string().regex(/^[a-z0-9][a-z0-9._-]{0,127}$/, "lowercase letters, digits, . _ - (1–128)");

/**
 * What a string that is not well-formed Unicode is told. JSON lets a `\ud800` escape
 * stand alone; such a string has no UTF-8 form, so it could not be stored as sent (and
 * two different ones would be stored alike).
 */
export const LONE_SURROGATE = "not valid Unicode: a lone surrogate (a \\ud800–\\udfff escape without its pair)";

/** `String.prototype.isWellFormed` (ES2024; Node 20 has it, this TypeScript lib does not). */
export function isWellFormed(s: string): boolean {
  return (s as string & { isWellFormed(): boolean }).isWellFormed();
}

/**
 * `String.prototype.toWellFormed` (ES2024): each lone surrogate replaced by U+FFFD. For
 * text the server writes about client input (a refusal's detail may quote a bad key):
 * JSON.stringify escapes a lone surrogate, and Redis' cjson refuses that escape.
 */
export function toWellFormed(s: string): string {
  return (s as string & { toWellFormed(): string }).toWellFormed();
}

/** What a number JSON reads as ±Infinity (beyond ±1.7976931348623157e308) is told. */
export const NUMBER_OUT_OF_RANGE = "a number out of range: beyond ±1.7976931348623157e308 it reads as Infinity";

/** A value that cannot be stored as sent, where it is and why. */
export interface Unstorable {
  path: Array<string | number>;
  message: string;
}

/** Why a leaf of parsed JSON cannot be stored as sent, or null. */
function leafProblem(v: unknown): string | null {
  if (typeof v === "string") return isWellFormed(v) ? null : LONE_SURROGATE;
  if (typeof v === "number") return Number.isFinite(v) ? null : NUMBER_OUT_OF_RANGE;
  return null;
}

/**
 * The first string or key of parsed JSON that is not well-formed Unicode, or number that
 * read as ±Infinity (`1e400`): JSON allows both, but neither can be stored as sent (the
 * canonical JSON that hashes and stores a payload refuses them). Null when there is none.
 * Iterative: no recursion to overflow.
 */
export function unstorable(value: unknown): Unstorable | null {
  if (allStorable(value)) return null; // the common case, without building paths
  const found = findInJson<Unstorable>(
    value,
    (v, path) => {
      const message = leafProblem(v);
      return message ? { path, message } : undefined;
    },
    (key, _child, path) => (isWellFormed(key) ? undefined : { path: [...path, key], message: LONE_SURROGATE }),
  );
  return found ?? null;
}

/**
 * Walks parsed JSON depth-first, knowing the path of each place, and returns the first
 * answer of `atValue` (asked of every value) or `atKey` (asked of every object key, with
 * its value, before that value is visited). Iterative: no recursion to overflow.
 */
export function findInJson<T>(
  value: unknown,
  atValue: (v: unknown, path: Array<string | number>) => T | undefined,
  atKey: (key: string, child: unknown, path: Array<string | number>) => T | undefined,
): T | undefined {
  const stack: Array<[unknown, Array<string | number>]> = [[value, []]];
  while (stack.length > 0) {
    const [v, path] = stack.pop() as [unknown, Array<string | number>];
    const found = atValue(v, path);
    if (found !== undefined) return found;
    if (v === null || typeof v !== "object") continue;
    if (Array.isArray(v)) {
      v.forEach((child, i) => {
        stack.push([child, [...path, i]]);
      });
      continue;
    }
    for (const key of Object.keys(v)) {
      const child = (v as Record<string, unknown>)[key];
      const atThisKey = atKey(key, child, path);
      if (atThisKey !== undefined) return atThisKey;
      stack.push([child, [...path, key]]);
    }
  }
  return undefined;
}

/** Whether `unstorable(value)` is null (one walk, no paths). */
function allStorable(value: unknown): boolean {
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    const v = stack.pop();
    if (typeof v === "string") {
      if (!isWellFormed(v)) return false;
    } else if (typeof v === "number") {
      if (!Number.isFinite(v)) return false;
    } else if (Array.isArray(v)) {
      for (const child of v) stack.push(child);
    } else if (v !== null && typeof v === "object") {
      for (const key in v) {
        if (!Object.hasOwn(v, key)) continue;
        if (!isWellFormed(key)) return false;
        stack.push((v as Record<string, unknown>)[key]);
      }
    }
  }
  return true;
}

/** A string of `min`–`max` UTF-16 units that is well-formed Unicode. */
export const Text = (min: number, max: number) => z.string().min(min).max(max).refine(isWellFormed, LONE_SURROGATE);

/** An event id (unique per tenant and producer). */
export const EventId = Text(1, 200);
export const CorrelationId = Text(1, 256);
const IsoTime = z.iso.datetime({ offset: true });
const JsonObject = z.record(z.string(), z.unknown());

function kindOf(v: unknown): string {
  return v === null ? "null" : Array.isArray(v) ? "array" : typeof v;
}
/**
 * A JSON object from `JSON.parse`, checked as one (not an array, not null) and passed
 * through as it is. `z.record(z.string(), z.unknown())` would check every key and copy
 * the object, allocating per key on a path that parses every event of a batch.
 */
const ParsedObject = z
  .custom<Record<string, unknown>>((v) => kindOf(v) === "object", {
    error: (iss) => `Invalid input: expected object, received ${kindOf(iss.input)}`,
  })
  // what the OpenAPI document says of it (a custom check has no JSON Schema of its own)
  .meta({ type: "object", additionalProperties: {} });
/** A JSON object sent by a client that can be stored as sent (see `unstorable`). */
export const InputObject = ParsedObject.superRefine((value, ctx) => {
  const bad = unstorable(value);
  if (bad) ctx.addIssue({ code: "custom", message: bad.message, path: bad.path });
});

/** The event envelope a producer sends (docs/api.md, Events). */
export const EventInput = z
  .strictObject({
    id: EventId,
    type: EventType,
    correlationId: CorrelationId,
    occurredAt: IsoTime.optional(),
    payload: InputObject.optional(),
  })
  .meta({ id: "EventInput", description: "The event envelope a producer sends" });
export type EventInput = z.infer<typeof EventInput>;

/** The body of `POST /v1/waits`. */
export const WaitSpec = z
  .strictObject({
    runId: Text(1, 200),
    position: Text(1, 200),
    eventType: EventType,
    correlationId: CorrelationId,
    timeoutMs: z.int().positive().max(Number.MAX_SAFE_INTEGER).optional(),
    deadline: IsoTime.optional(),
    since: IsoTime.optional(),
    externalJobId: Text(1, 200).optional(),
    metadata: InputObject.optional(),
    /** ask for a completion token (not part of the definition; docs/api.md, Completion tokens) */
    token: z.boolean().optional(),
    /** each accepted heartbeat sets deadline = now + heartbeatMs (part of the definition when given) */
    heartbeatMs: z.int().min(1000).max(Number.MAX_SAFE_INTEGER).optional(),
  })
  .refine((w) => !(w.timeoutMs !== undefined && w.deadline !== undefined), {
    message: "give timeoutMs or deadline, not both",
    path: ["deadline"],
  })
  .meta({ id: "WaitSpec", description: "A wait to register: give timeoutMs or deadline, not both (or neither)" });
export type WaitSpec = z.infer<typeof WaitSpec>;

export const WaitState = z.enum(["waiting", "resolved", "timed_out", "cancelled"]).meta({ id: "WaitState" });
export type WaitState = z.infer<typeof WaitState>;

export const ResolutionKind = z.enum(["event", "timeout", "cancel", "deliver", "token"]).meta({ id: "ResolutionKind" });
export type ResolutionKind = z.infer<typeof ResolutionKind>;

/** A reference to an accepted event. */
export const EventRef = z
  .object({
    producer: z.string(),
    id: z.string(),
    acceptedAt: z.string(),
    streamId: z.string(),
  })
  .meta({ id: "EventRef" });
export type EventRef = z.infer<typeof EventRef>;

/** How a resolution ended for the run: it succeeded or it failed (docs/api.md, Completion tokens). */
export const Outcome = z.enum(["success", "failure"]).meta({ id: "Outcome" });
export type Outcome = z.infer<typeof Outcome>;

/** The error object of a failure (token fail, deliver with outcome failure). */
export const FailureError = z
  .strictObject({
    message: Text(1, 2000),
    code: Text(1, 200).optional(),
    details: InputObject.optional(),
  })
  .meta({ id: "FailureError" });
export type FailureError = z.infer<typeof FailureError>;

export const Resolution = z
  .object({
    kind: ResolutionKind,
    at: z.string(),
    /** the resolving event (kind `event`) */
    event: EventRef.extend({ payload: JsonObject.nullable() }).optional(),
    /** the deadline that passed (kind `timeout`) */
    deadline: z.string().optional(),
    /** the delivered payload (kinds `deliver` and `token`) */
    payload: JsonObject.nullable().optional(),
    /** success or failure (kinds `event`, `deliver`, `token`) */
    outcome: Outcome.optional(),
    /** the error given with a failure */
    error: JsonObject.nullable().optional(),
  })
  .meta({ id: "Resolution" });
export type Resolution = z.infer<typeof Resolution>;

export const HistoryWhat = z
  .enum([
    "registered",
    "job_attached",
    "resolved",
    "late_event",
    "duplicate_ignored",
    "continuation_dispatched",
    "consumed",
    "sweeper_rescheduled",
    "token_issued",
    "heartbeat",
  ])
  .meta({ id: "HistoryWhat", description: "what a history entry records; more may be added" });
export type HistoryWhat = z.infer<typeof HistoryWhat>;

export const HistoryEntry = z.looseObject({ at: z.string(), what: HistoryWhat }).meta({ id: "HistoryEntry" });
export type HistoryEntry = z.infer<typeof HistoryEntry>;

export const Consumption = z.object({ by: z.string(), at: z.string() }).meta({ id: "Consumption" });
export type Consumption = z.infer<typeof Consumption>;

/** A wait as the API shows it. */
export const Wait = z
  .object({
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
    /** when the current completion token was issued; null: none was */
    token: z.object({ issuedAt: z.string() }).nullable(),
    /** heartbeats of a wait registered with heartbeatMs; null otherwise */
    heartbeat: z.object({ intervalMs: z.number(), count: z.number(), lastAt: z.string().nullable() }).nullable(),
  })
  .meta({ id: "Wait", description: "A wait as the API shows it" });
export type Wait = z.infer<typeof Wait>;

export const EventStatus = z.enum(["pending", "matched", "buffered", "late", "expired"]).meta({ id: "EventStatus" });
export type EventStatus = z.infer<typeof EventStatus>;

/** An accepted event as `GET /v1/events/{producer}/{eventId}` shows it. */
export const EventRecord = z
  .object({
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
  })
  .meta({ id: "EventRecord", description: "An accepted event" });
export type EventRecord = z.infer<typeof EventRecord>;
