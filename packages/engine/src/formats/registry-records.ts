/**
 * The stored records of the runtime registry (`{<prefix>:reg}:r`, one hash; docs/api.md,
 * Admin). Field names: `t:<tenant>`, `p:<tenant>/<producer>`, `h:<keyId>`,
 * `e:<eventType>`. Keys are stored as HMAC-SHA256 digests under the secret key (`mac`;
 * `hash`, a plain SHA-256, in records of an earlier version), secrets encrypted
 * (`enc`, registry/secret-key.ts); `fp` is the fingerprint of the config file's form
 * of the entry when the entry is what a file made it (absent once the API changed it).
 */
import { ContinuationGroups, EventTypePattern } from "@rendezvous/protocol";
import { z } from "zod";

/** Plain numbers kept for the quotas (read by them, not here). */
export const Limits = z.record(z.string().regex(/^[A-Za-z][A-Za-z0-9]{0,63}$/), z.number().nonnegative());
export type Limits = z.infer<typeof Limits>;

const Millis = z.number().int().nonnegative();

/** A bearer key (`mac`, or an earlier version's `hash`) or an HMAC secret (`enc`) of a producer. */
export const CredentialRecord = z.object({
  id: z.string(),
  mac: z.string().optional(),
  hash: z.string().optional(),
  enc: z.string().optional(),
  createdAt: Millis,
  expiresAt: Millis.optional(),
});
export type CredentialRecord = z.infer<typeof CredentialRecord>;

export const TenantRecord = z.object({
  disabled: z.boolean().optional(),
  webhook: z.object({ url: z.string(), enc: z.string() }).optional(),
  groups: ContinuationGroups.optional(),
  limits: Limits.optional(),
  createdAt: Millis,
  updatedAt: Millis,
  fp: z.string().optional(),
});
export type TenantRecord = z.infer<typeof TenantRecord>;

export const ProducerRecord = z.object({
  eventTypes: z.array(EventTypePattern).min(1),
  rateLimitPerSec: z.number().positive().optional(),
  limits: Limits.optional(),
  disabled: z.boolean().optional(),
  keys: z.array(CredentialRecord),
  secrets: z.array(CredentialRecord),
  createdAt: Millis,
  updatedAt: Millis,
  fp: z.string().optional(),
});
export type ProducerRecord = z.infer<typeof ProducerRecord>;

export const HostKeyRecord = z.object({
  tenant: z.string(),
  /** HMAC-SHA256 hex of the key under the secret key */
  mac: z.string().optional(),
  /** SHA-256 hex of the key (records of an earlier version) */
  hash: z.string().optional(),
  createdAt: Millis,
  expiresAt: Millis.optional(),
  fp: z.string().optional(),
});
export type HostKeyRecord = z.infer<typeof HostKeyRecord>;

const EventTypeVersion = z.object({
  version: z.number().int().positive(),
  at: Millis,
  payloadSchema: z.record(z.string(), z.unknown()).optional(),
  retentionMs: z.number().int().positive().optional(),
});

export const EventTypeRecord = z.object({
  version: z.number().int().positive(),
  payloadSchema: z.record(z.string(), z.unknown()).optional(),
  retentionMs: z.number().int().positive().optional(),
  versions: z.array(EventTypeVersion),
  fp: z.string().optional(),
});
export type EventTypeRecord = z.infer<typeof EventTypeRecord>;

/** How many versions of an event type are kept. */
export const EVENT_TYPE_VERSIONS_KEPT = 20;

export type RecordKind = "t" | "p" | "h" | "e";

/** Every record of the registry, by kind and name. */
export interface RegistryRecords {
  tenants: Map<string, TenantRecord>;
  /** by `<tenant>/<producer>` */
  producers: Map<string, ProducerRecord>;
  /** by key id */
  hostKeys: Map<string, HostKeyRecord>;
  eventTypes: Map<string, EventTypeRecord>;
}

export function emptyRecords(): RegistryRecords {
  return { tenants: new Map(), producers: new Map(), hostKeys: new Map(), eventTypes: new Map() };
}

/** The hash field of a record. */
export function recordField(kind: RecordKind, name: string): string {
  return `${kind}:${name}`;
}

/** One stored record, by its field; null when it does not decode. */
export type DecodedRecord =
  | { kind: "t"; name: string; record: TenantRecord }
  | { kind: "p"; name: string; record: ProducerRecord }
  | { kind: "h"; name: string; record: HostKeyRecord }
  | { kind: "e"; name: string; record: EventTypeRecord };

const SCHEMAS = { t: TenantRecord, p: ProducerRecord, h: HostKeyRecord, e: EventTypeRecord } as const;

export function decodeRecord(field: string, raw: string): DecodedRecord | null {
  const kind = field.slice(0, 1);
  if (field.charAt(1) !== ":" || !Object.hasOwn(SCHEMAS, kind)) return null;
  let json: unknown;
  try {
    json = JSON.parse(raw);
  } catch {
    return null;
  }
  const parsed = SCHEMAS[kind as RecordKind].safeParse(json);
  return parsed.success ? ({ kind, name: field.slice(2), record: parsed.data } as DecodedRecord) : null;
}

/** The map of a kind in a record set. */
export function recordsOf(records: RegistryRecords, kind: RecordKind): Map<string, unknown> {
  return kind === "t"
    ? records.tenants
    : kind === "p"
      ? records.producers
      : kind === "h"
        ? records.hostKeys
        : records.eventTypes;
}

/**
 * Decodes the registry hash (HGETALL). A field that does not decode is skipped and
 * named in `bad` (the caller logs it): one broken record does not stop a process.
 */
export function decodeRecords(hash: Record<string, string>): { records: RegistryRecords; bad: string[] } {
  const records = emptyRecords();
  const bad: string[] = [];
  for (const [field, raw] of Object.entries(hash)) {
    const d = decodeRecord(field, raw);
    if (d === null) bad.push(field);
    else recordsOf(records, d.kind).set(d.name, d.record);
  }
  return { records, bad };
}
