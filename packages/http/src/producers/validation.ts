/**
 * Event validation, before anything is written: the raw body is strict UTF-8 JSON,
 * an event holds no prototype-poisoning keys, the envelope is the protocol's zod `EventInput`
 * (a plainly valid one is checked without zod: envelope.ts), the type is one the producer
 * may send, and the payload satisfies its type's JSON Schema (compiled once with ajv). Every refusal is a RendezvousError whose
 * `issues` (`{path, message}`) say what to change.
 */

import type { Config } from "@rendezvous/engine";
import { CorrelationId, EventId, EventInput, EventType, findInJson, RendezvousError } from "@rendezvous/protocol";
import { Ajv, type ErrorObject, type ValidateFunction } from "ajv";
import addFormatsModule from "ajv-formats";
import type { ProducerIdentity } from "../auth.js";
import { plainEnvelope } from "./envelope.js";

/** A place in the event and what is wrong there. */
export interface Issue {
  path: Array<string | number>;
  message: string;
}

/** Most levels of nesting of an event payload. */
export const MAX_JSON_DEPTH = 64;

/**
 * True when `value` nests objects/arrays deeper than `limit` levels. Iterative (no
 * recursion to overflow) and without a tuple per node: it runs for every event.
 */
export function nestedDeeperThan(value: unknown, limit: number): boolean {
  const values: unknown[] = [value];
  const depths: number[] = [0];
  while (values.length > 0) {
    const v = values.pop();
    const depth = depths.pop() as number;
    if (v === null || typeof v !== "object") continue;
    if (depth + 1 > limit) return true;
    if (Array.isArray(v)) {
      for (const child of v) {
        values.push(child);
        depths.push(depth + 1);
      }
    } else {
      for (const key in v) {
        values.push((v as Record<string, unknown>)[key]);
        depths.push(depth + 1);
      }
    }
  }
  return false;
}

/** Most issues reported for one event. */
const MAX_ISSUES = 20;

/** An event that failed validation, with what could be read of it (for the rejection record). */
export interface Refused {
  error: RendezvousError;
  /** type and correlation id when both are valid (the event can be placed under its match key) */
  matchKey: { eventType: string; correlationId: string } | null;
  eventId: string | undefined;
}

export type Checked = { ok: true; event: EventInput } | ({ ok: false } & Refused);

export function invalidEvent(message: string, issues: Issue[]): RendezvousError {
  return new RendezvousError("invalid_event", message, { issues: issues.slice(0, MAX_ISSUES) });
}

const utf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: false });

/**
 * Parses a raw body as JSON. `JSON.parse` makes a `__proto__` key an ordinary own property
 * (it never sets a prototype), so prototype-poisoning keys are found per event by
 * `EventValidator.check` (`poisonedPath`): in a batch only that event is refused.
 * @throws RendezvousError `invalid_event` (not UTF-8, not JSON)
 */
export function parseJsonBody(raw: Buffer): unknown {
  let text: string;
  try {
    text = utf8.decode(raw);
  } catch {
    throw invalidEvent("body is not valid UTF-8", [{ path: [], message: "body is not valid UTF-8" }]);
  }
  try {
    return JSON.parse(text);
  } catch (err) {
    throw invalidEvent("body is not valid JSON", [{ path: [], message: (err as Error).message }]);
  }
}

/**
 * Where `value` holds a prototype-poisoning key (`__proto__` anywhere, or `constructor`
 * holding `prototype`), or null. Iterative: no recursion to overflow. A value nested
 * deeper than an event may be is not searched (a path per node would cost its depth
 * each): the answer is then the top-level field holding the deep part.
 */
export function poisonedPath(value: unknown): Array<string | number> | null {
  const scan = scanEvent(value);
  if (!scan.poisoned) return null; // the common case, without building paths
  if (scan.tooDeep) return scan.tooDeep;
  const found = findInJson<Array<string | number>>(
    value,
    () => undefined,
    (key, child, path) => {
      if (key === "__proto__") return [...path, key];
      if (key === "constructor" && child !== null && typeof child === "object" && Object.hasOwn(child, "prototype")) {
        return [...path, key, "prototype"];
      }
      return undefined;
    },
  );
  return found ?? null;
}

/**
 * Most levels of nesting of an event: its own object, then MAX_JSON_DEPTH for the
 * payload. Every field is held to it, not only the payload: whatever a field holds
 * reaches JSON.stringify, zod or the rejection record, which recurse.
 */
export const MAX_EVENT_DEPTH = MAX_JSON_DEPTH + 1;

/** What {@link scanEvent} found. */
export interface EventScan {
  /** a prototype-poisoning key somewhere */
  poisoned: boolean;
  /** the top-level field (`[]`: the value itself) nesting deeper than MAX_EVENT_DEPTH, or null */
  tooDeep: Array<string | number> | null;
}

/**
 * One walk over an event (no paths, no tuples: it runs for every event): whether it
 * holds a prototype-poisoning key anywhere, and whether any field nests deeper than
 * MAX_EVENT_DEPTH (for the payload: deeper than MAX_JSON_DEPTH, as
 * `nestedDeeperThan(payload, MAX_JSON_DEPTH)` says). It stops at the first level too
 * deep, so a value of any depth costs at most its size.
 */
export function scanEvent(raw: unknown): EventScan {
  let poisoned = false;
  const values: unknown[] = [raw];
  const levels: number[] = [1];
  // the top-level field each value is in (undefined: the event itself)
  const fields: Array<string | undefined> = [undefined];
  while (values.length > 0) {
    const v = values.pop();
    const level = levels.pop() as number;
    const field = fields.pop();
    if (v === null || typeof v !== "object") continue;
    if (level > MAX_EVENT_DEPTH) return { poisoned, tooDeep: field === undefined ? [] : [field] };
    if (Array.isArray(v)) {
      for (const child of v) {
        values.push(child);
        levels.push(level + 1);
        fields.push(field);
      }
      continue;
    }
    for (const key in v) {
      if (!Object.hasOwn(v, key)) continue;
      const child = (v as Record<string, unknown>)[key];
      if (key === "__proto__") poisoned = true;
      else if (
        key === "constructor" &&
        child !== null &&
        typeof child === "object" &&
        Object.hasOwn(child, "prototype")
      ) {
        poisoned = true;
      }
      values.push(child);
      levels.push(level + 1);
      fields.push(v === raw ? key : field);
    }
  }
  return { poisoned, tooDeep: null };
}

function zodPath(path: readonly PropertyKey[]): Array<string | number> {
  return path.map((p) => (typeof p === "number" ? p : String(p)));
}

function ajvIssue(e: ErrorObject): Issue {
  const path: Array<string | number> = ["payload"];
  for (const part of e.instancePath.split("/").slice(1)) {
    const decoded = part.replace(/~1/g, "/").replace(/~0/g, "~");
    path.push(/^\d+$/.test(decoded) ? Number(decoded) : decoded);
  }
  const params = e.params as Record<string, unknown>;
  if (e.keyword === "required" && typeof params.missingProperty === "string") path.push(params.missingProperty);
  if (e.keyword === "additionalProperties" && typeof params.additionalProperty === "string") {
    return { path: [...path, params.additionalProperty], message: "is not allowed" };
  }
  return { path, message: e.message ?? `fails ${e.keyword}` };
}

/** Type and correlation id of a refused event when both are valid (it can be placed). */
export function readableMatchKey(raw: unknown): Refused["matchKey"] {
  if (typeof raw !== "object" || raw === null) return null;
  const { type, correlationId } = raw as Record<string, unknown>;
  if (!EventType.safeParse(type).success || !CorrelationId.safeParse(correlationId).success) return null;
  return { eventType: type as string, correlationId: correlationId as string };
}

/** The id of a refused event when it is a valid id. */
export function readableId(raw: unknown): string | undefined {
  if (typeof raw !== "object" || raw === null) return undefined;
  const { id } = raw as Record<string, unknown>;
  return EventId.safeParse(id).success ? (id as string) : undefined;
}

// ajv-formats is CommonJS with a default export; under NodeNext it arrives as the module object.
const addFormats = ((addFormatsModule as unknown as { default?: unknown }).default ?? addFormatsModule) as unknown as (
  ajv: Ajv,
) => Ajv;

/**
 * One payload schema compiled.
 * @throws RendezvousError `invalid_config` naming the type
 */
export function compileSchema(ajv: Ajv, type: string, schema: Record<string, unknown>): ValidateFunction {
  try {
    return ajv.compile(schema);
  } catch (err) {
    throw new RendezvousError(
      "invalid_config",
      `invalid config: eventTypes.${type}.payloadSchema: ${(err as Error).message}`,
    );
  }
}

/** A fresh ajv as the validator uses it (the admin API checks that a schema compiles). */
export function newAjv(): Ajv {
  const ajv = new Ajv({ allErrors: true, strict: false, coerceTypes: false, useDefaults: false });
  addFormats(ajv);
  return ajv;
}

/** Checks events against the envelope, the producer's types and the payload schemas. */
export class EventValidator {
  #schemas = new Map<string, ValidateFunction>();
  /** `<type>@<version>` → compiled schema: each version is compiled once */
  readonly #compiled = new Map<string, ValidateFunction>();

  /**
   * Compiles every payload schema of the config once.
   * @throws RendezvousError `invalid_config` naming the type whose schema does not compile
   */
  constructor(config: Pick<Config, "eventTypes">) {
    // No coercion, no defaults, no removal: the stored payload is the one sent.
    const ajv = new Ajv({ allErrors: true, strict: false, coerceTypes: false, useDefaults: false });
    addFormats(ajv);
    for (const [type, t] of Object.entries(config.eventTypes)) {
      if (!t.payloadSchema) continue;
      this.#schemas.set(type, compileSchema(ajv, type, t.payloadSchema));
    }
  }

  /**
   * Takes the payload schemas of a registry view's event types: a type's schema is
   * compiled the first time its version is seen, then reused.
   * @throws RendezvousError `invalid_config` naming the type whose schema does not compile
   *   (nothing is replaced)
   */
  follow(
    eventTypes: ReadonlyMap<string, { version: number; payloadSchema: Record<string, unknown> | undefined }>,
  ): void {
    const next = new Map<string, ValidateFunction>();
    for (const [type, t] of eventTypes) {
      if (!t.payloadSchema) continue;
      const id = `${type}@${t.version}`;
      let fn = this.#compiled.get(id);
      if (!fn) {
        // an ajv of its own: two versions of a type may carry the same `$id`
        fn = compileSchema(newAjv(), type, t.payloadSchema);
        this.#compiled.set(id, fn);
      }
      next.set(type, fn);
    }
    this.#schemas = next;
  }

  /** Validates one parsed event for a producer. */
  check(raw: unknown, producer: ProducerIdentity): Checked {
    // depth first: nothing below (findInJson, zod, ajv) may see a value nested deeper
    const scan = scanEvent(raw);
    if (scan.tooDeep) {
      return {
        ok: false,
        error: invalidEvent("event breaks the envelope", [
          { path: scan.tooDeep, message: `nested deeper than ${MAX_JSON_DEPTH} levels` },
        ]),
        matchKey: readableMatchKey(raw),
        eventId: readableId(raw),
      };
    }
    if (scan.poisoned) {
      return {
        ok: false,
        error: invalidEvent("event holds a forbidden key", [
          { path: poisonedPath(raw) ?? [], message: "forbidden key (__proto__ or constructor.prototype)" },
        ]),
        matchKey: readableMatchKey(raw),
        eventId: readableId(raw),
      };
    }
    const plain = plainEnvelope(raw);
    const parsed = plain ? { success: true as const, data: plain } : EventInput.safeParse(raw);
    if (!parsed.success) {
      const issues = parsed.error.issues.map((i) => ({
        path: zodPath(i.path),
        message: i.message.replace("expected record", "expected object"),
      }));
      return {
        ok: false,
        error: invalidEvent("event breaks the envelope", issues),
        matchKey: readableMatchKey(raw),
        eventId: readableId(raw),
      };
    }
    const event = parsed.data;
    const matchKey = { eventType: event.type, correlationId: event.correlationId };
    if (event.occurredAt !== undefined) {
      // Every time the API answers is UTC with milliseconds: store occurredAt that way
      // (equal instants written with other offsets are then the same content).
      const ms = Date.parse(event.occurredAt);
      if (Number.isNaN(ms)) {
        return {
          ok: false,
          error: invalidEvent("event breaks the envelope", [{ path: ["occurredAt"], message: "not a valid time" }]),
          matchKey,
          eventId: event.id,
        };
      }
      event.occurredAt = new Date(ms).toISOString();
    }
    if (!producer.allows(event.type)) {
      return {
        ok: false,
        error: new RendezvousError("forbidden_event_type", undefined, { type: event.type }),
        matchKey,
        eventId: event.id,
      };
    }
    const validate = this.#schemas.get(event.type);
    // An absent payload is checked as {}: a schema's required fields still apply.
    if (validate && !validate(event.payload ?? {})) {
      const issues = (validate.errors ?? []).map(ajvIssue);
      return {
        ok: false,
        error: invalidEvent(`payload breaks the schema of ${event.type}`, issues),
        matchKey,
        eventId: event.id,
      };
    }
    return { ok: true, event };
  }
}
