/**
 * The stored records of the runtime registry (`{<prefix>:reg}:r`, one hash; docs/api.md,
 * Admin). Field names: `t:<tenant>`, `p:<tenant>/<producer>`, `h:<keyId>`,
 * `e:<eventType>`. Keys are stored as SHA-256 hashes (`hash`), secrets encrypted
 * (`enc`, registry/secret-key.ts); `fp` is the fingerprint of the config file's form
 * of the entry when the entry is what a file made it (absent once the API changed it).
 */
import { ContinuationGroups, EventTypePattern } from "@rendezvous/protocol";
import { z } from "zod";

/** Plain numbers kept for the quotas (read by them, not here). */
export const Limits = z.record(z.string().regex(/^[A-Za-z][A-Za-z0-9]{0,63}$/), z.number().nonnegative());
export type Limits = z.infer<typeof Limits>;

const Millis = z.number().int().nonnegative();

/** A bearer key (`hash`) or an HMAC secret (`enc`) of a producer. */
export const CredentialRecord = z.object({
  id: z.string(),
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
  hash: z.string(),
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

/**
 * Decodes the registry hash (HGETALL). A field that does not decode is skipped and
 * named in `bad` (the caller logs it): one broken record does not stop a process.
 */
export function decodeRecords(hash: Record<string, string>): { records: RegistryRecords; bad: string[] } {
  const records = emptyRecords();
  const bad: string[] = [];
  for (const [field, raw] of Object.entries(hash)) {
    const kind = field.slice(0, 2);
    const name = field.slice(2);
    let json: unknown;
    try {
      json = JSON.parse(raw);
    } catch {
      bad.push(field);
      continue;
    }
    const parsed =
      kind === "t:"
        ? TenantRecord.safeParse(json)
        : kind === "p:"
          ? ProducerRecord.safeParse(json)
          : kind === "h:"
            ? HostKeyRecord.safeParse(json)
            : kind === "e:"
              ? EventTypeRecord.safeParse(json)
              : null;
    if (!parsed?.success) {
      bad.push(field);
      continue;
    }
    if (kind === "t:") records.tenants.set(name, parsed.data as TenantRecord);
    else if (kind === "p:") records.producers.set(name, parsed.data as ProducerRecord);
    else if (kind === "h:") records.hostKeys.set(name, parsed.data as HostKeyRecord);
    else records.eventTypes.set(name, parsed.data as EventTypeRecord);
  }
  return { records, bad };
}
