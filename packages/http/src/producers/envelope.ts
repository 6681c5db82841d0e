/**
 * The envelope of a plainly valid event without zod: what `EventInput.safeParse` answers
 * for it (the same keys, in its order, the same payload object), from a few type checks.
 * Zod walks its schema per field (checks, refinements, issue bookkeeping) and was about a
 * twentieth of a single event's CPU in the api. Anything not plainly valid — an `occurredAt`
 * (zod's datetime rules), an extra key, a bad field — is left to zod, which also words the
 * issues: only the success path is fast (a property test holds it to zod's answers).
 */
import { type EventInput, isWellFormed, unstorable } from "@rendezvous/protocol";

/** `EventType`'s pattern (protocol/schemas.ts). */
const EVENT_TYPE = /^[a-z0-9][a-z0-9._-]{0,127}$/;

const KEYS = new Set(["id", "type", "correlationId", "payload"]);

/** A well-formed string of `min`–`max` UTF-16 units (protocol's `Text`). */
function text(v: unknown, min: number, max: number): v is string {
  return typeof v === "string" && v.length >= min && v.length <= max && isWellFormed(v);
}

/**
 * `EventInput.safeParse(raw).data` when `raw` is plainly valid without an `occurredAt`;
 * undefined when zod is to decide.
 */
export function plainEnvelope(raw: unknown): EventInput | undefined {
  if (raw === null || typeof raw !== "object" || Array.isArray(raw)) return undefined;
  const o = raw as Record<string, unknown>;
  for (const key in o) if (!KEYS.has(key) || !Object.hasOwn(o, key)) return undefined;
  const { id, type, correlationId } = o;
  if (!text(id, 1, 200) || typeof type !== "string" || !EVENT_TYPE.test(type) || !text(correlationId, 1, 256)) {
    return undefined;
  }
  if (!Object.hasOwn(o, "payload")) return { id, type, correlationId };
  const payload = o.payload;
  if (payload === null || typeof payload !== "object" || Array.isArray(payload) || unstorable(payload) !== null) {
    return undefined;
  }
  return { id, type, correlationId, payload: payload as Record<string, unknown> };
}
