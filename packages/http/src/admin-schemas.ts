/**
 * The admin routes' bodies and answers (docs/api.md, Admin), each a named OpenAPI
 * component, and the presenters that turn registry records into them. An answer never
 * carries a hash, a ciphertext or a secret: a generated key or secret appears only in
 * the answer that creates it (`key`, `secret`, `value`).
 */
import { hash } from "node:crypto";
import type { CredentialRecord, EventTypeRecord, Limits, ProducerRecord, RegistrySnapshot } from "@rendezvous/engine";
import { ContinuationGroups, EventType, EventTypePattern, errorResponses, Name } from "@rendezvous/protocol";
import { z } from "zod";

const Time = z.string().meta({ description: "ISO-8601 UTC with milliseconds" });
const Webhook = z.strictObject({ url: z.url(), secret: z.string().min(1).max(1000) });
const OverlapSeconds = z.int().min(0).max(2_592_000);

export const AdminKey = z
  .object({ id: z.string(), createdAt: Time, expiresAt: Time.nullable(), lastUsedAt: Time.nullable() })
  .meta({ id: "AdminKey" });
export type AdminKey = z.infer<typeof AdminKey>;

export const AdminProducer = z
  .object({
    id: z.string(),
    tenant: z.string(),
    eventTypes: z.array(z.string()),
    rateLimitPerSec: z.number().nullable(),
    limits: z.record(z.string(), z.number()).nullable(),
    disabled: z.boolean(),
    keys: z.array(AdminKey),
    secrets: z.array(AdminKey),
  })
  .meta({ id: "AdminProducer" });
export type AdminProducer = z.infer<typeof AdminProducer>;

export const AdminTenant = z
  .object({
    name: z.string(),
    disabled: z.boolean(),
    webhook: z.object({ url: z.string() }).nullable(),
    continuationGroups: z.record(z.string(), z.object({ eventTypes: z.array(z.string()) })).nullable(),
    limits: z.record(z.string(), z.number()).nullable(),
    producers: z.array(AdminProducer),
    hostKeys: z.array(AdminKey),
    createdAt: Time,
    updatedAt: Time,
  })
  .meta({ id: "AdminTenant" });
export type AdminTenant = z.infer<typeof AdminTenant>;

const EventTypeVersion = z.object({
  version: z.number(),
  at: Time,
  payloadSchema: z.record(z.string(), z.unknown()).nullable(),
  retentionMs: z.number().nullable(),
});
export const AdminEventType = z
  .object({
    type: z.string(),
    version: z.number(),
    payloadSchema: z.record(z.string(), z.unknown()).nullable(),
    retentionMs: z.number().nullable(),
    versions: z.array(EventTypeVersion),
  })
  .meta({ id: "AdminEventType" });

export const AuditEntryBody = z
  .object({
    id: z.string(),
    at: Time,
    actor: z.string(),
    action: z.string(),
    target: z.string(),
    version: z.number(),
  })
  .meta({ id: "AdminAuditEntry" });

// bodies

const CountLimit = z.int().min(0).nullable().optional();
const RateLimit = z.number().positive().nullable().optional();
/**
 * A tenant's `limits`: its quotas (docs/api.md, "Quotas of a tenant set through the admin
 * API"); `null` or absent = not set here. Any other name is refused: a misspelt quota
 * would otherwise be stored and never read.
 */
export const TenantLimits = z
  .strictObject({
    waitingWaits: CountLimit,
    bufferedEvents: CountLimit,
    hostRequestsPerSec: RateLimit,
    producerEventsPerSec: RateLimit,
  })
  .meta({ id: "TenantLimits" });
export type TenantLimits = z.infer<typeof TenantLimits>;
/** A producer's `limits`: no quota names apply to a producer (its rate is `rateLimitPerSec`). */
export const ProducerLimits = z.strictObject({}).meta({ id: "ProducerLimits" });

/** The limits as stored: the names set (a `null` is "not set", so not stored). */
export function storedLimits(limits: Readonly<Record<string, number | null | undefined>>): Limits {
  const out: Limits = {};
  for (const [name, v] of Object.entries(limits)) if (typeof v === "number") out[name] = v;
  return out;
}
export const CreateTenantBody = z
  .strictObject({
    name: Name,
    webhook: Webhook.optional(),
    continuationGroups: ContinuationGroups.optional(),
    limits: TenantLimits.optional(),
  })
  .meta({ id: "CreateTenantRequest" });
export const UpdateTenantBody = z
  .strictObject({
    disabled: z.boolean().optional(),
    webhook: Webhook.nullable().optional(),
    continuationGroups: ContinuationGroups.nullable().optional(),
    limits: TenantLimits.nullable().optional(),
  })
  .meta({ id: "UpdateTenantRequest" });
export const RotateBody = z
  .strictObject({ overlapSeconds: OverlapSeconds.optional() })
  .meta({ id: "RotateKeyRequest" });
export const CreateProducerBody = z
  .strictObject({
    id: Name,
    eventTypes: z.array(EventTypePattern).min(1).max(100),
    rateLimitPerSec: z.number().positive().optional(),
    limits: ProducerLimits.optional(),
    credentials: z
      .array(z.enum(["key", "secret"]))
      .min(1)
      .max(2)
      .optional(),
  })
  .meta({ id: "CreateProducerRequest" });
export const UpdateProducerBody = z
  .strictObject({
    eventTypes: z.array(EventTypePattern).min(1).max(100).optional(),
    rateLimitPerSec: z.number().positive().nullable().optional(),
    limits: ProducerLimits.nullable().optional(),
    disabled: z.boolean().optional(),
  })
  .meta({ id: "UpdateProducerRequest" });
export const CreateCredentialBody = z
  .strictObject({ kind: z.enum(["key", "secret"]), overlapSeconds: OverlapSeconds.optional() })
  .meta({ id: "CreateCredentialRequest" });
export const PutEventTypeBody = z
  .strictObject({
    payloadSchema: z.record(z.string(), z.unknown()).optional(),
    retentionMs: z.int().positive().optional(),
  })
  .meta({ id: "PutEventTypeRequest" });

// params and queries
export const TenantParams = z.object({ tenant: Name });
export const KeyParams = z.object({ tenant: Name, id: z.string().max(100) });
export const ProducerParams = z.object({ tenant: Name, producer: Name });
export const CredentialParams = z.object({ tenant: Name, producer: Name, id: z.string().max(100) });
export const TypeParams = z.object({ type: EventType });
export const DeleteTenantQuery = z.strictObject({ force: z.enum(["true", "false"]).optional() });
export const AuditQuery = z.strictObject({
  limit: z.coerce.number().int().min(1).max(500).default(100),
  before: z
    .string()
    .regex(/^\d+-\d+$/)
    .optional(),
});

// answers
export const TenantResponse = z.object({ tenant: AdminTenant }).meta({ id: "AdminTenantResponse" });
export const TenantList = z.object({ tenants: z.array(AdminTenant) }).meta({ id: "AdminTenantList" });
export const TenantDeleted = z.object({ deleted: z.string(), waiting: z.number() }).meta({ id: "AdminTenantDeleted" });
export const Deleted = z.object({ deleted: z.string() }).meta({ id: "AdminDeleted" });
export const KeyList = z.object({ hostKeys: z.array(AdminKey) }).meta({ id: "AdminKeyList" });
export const HostKeyCreated = z
  .object({ hostKey: AdminKey, key: z.string(), rotated: AdminKey.optional() })
  .meta({ id: "AdminHostKeyCreated" });
export const KeyRevoked = z.object({ revoked: AdminKey }).meta({ id: "AdminKeyRevoked" });
export const ProducerResponse = z.object({ producer: AdminProducer }).meta({ id: "AdminProducerResponse" });
export const ProducerCreated = z
  .object({ producer: AdminProducer, key: z.string().optional(), secret: z.string().optional() })
  .meta({ id: "AdminProducerCreated" });
export const CredentialCreated = z
  .object({ credential: AdminKey, value: z.string(), producer: AdminProducer })
  .meta({ id: "AdminCredentialCreated" });
export const EventTypeResponse = z.object({ eventType: AdminEventType }).meta({ id: "AdminEventTypeResponse" });
export const EventTypeList = z.object({ eventTypes: z.array(AdminEventType) }).meta({ id: "AdminEventTypeList" });
export const AuditPage = z
  .object({ entries: z.array(AuditEntryBody), nextBefore: z.string().nullable() })
  .meta({ id: "AdminAuditPage" });
export const RegistryVersion = z.object({ version: z.number() }).meta({ id: "AdminRegistryVersion" });

const isoOf = (ms: number | undefined | null): string | null =>
  ms === undefined || ms === null ? null : new Date(ms).toISOString();

export function presentKey(
  c: { id: string; createdAt: number; expiresAt?: number | undefined },
  used: ReadonlyMap<string, number>,
): AdminKey {
  return {
    id: c.id,
    createdAt: isoOf(c.createdAt) as string,
    expiresAt: isoOf(c.expiresAt),
    lastUsedAt: isoOf(used.get(c.id)),
  };
}

export function presentProducer(field: string, p: ProducerRecord, used: ReadonlyMap<string, number>): AdminProducer {
  const slash = field.indexOf("/");
  return {
    id: field.slice(slash + 1),
    tenant: field.slice(0, slash),
    eventTypes: p.eventTypes,
    rateLimitPerSec: p.rateLimitPerSec ?? null,
    limits: p.limits ?? null,
    disabled: p.disabled === true,
    keys: p.keys.map((k: CredentialRecord) => presentKey(k, used)),
    secrets: p.secrets.map((k: CredentialRecord) => presentKey(k, used)),
  };
}

/** The tenant of a snapshot, or undefined. */
export function presentTenant(
  snap: RegistrySnapshot,
  name: string,
  used: ReadonlyMap<string, number>,
): AdminTenant | undefined {
  const t = snap.records.tenants.get(name);
  if (!t) return undefined;
  const producers: AdminProducer[] = [];
  for (const [field, p] of snap.records.producers) {
    if (field.startsWith(`${name}/`)) producers.push(presentProducer(field, p, used));
  }
  const hostKeys: AdminKey[] = [];
  for (const [id, h] of snap.records.hostKeys) if (h.tenant === name) hostKeys.push(presentKey({ ...h, id }, used));
  return {
    name,
    disabled: t.disabled === true,
    webhook: t.webhook ? { url: t.webhook.url } : null,
    continuationGroups: t.groups ?? null,
    limits: t.limits ?? null,
    producers: producers.sort((a, b) => a.id.localeCompare(b.id)),
    hostKeys: hostKeys.sort((a, b) => a.createdAt.localeCompare(b.createdAt) || a.id.localeCompare(b.id)),
    createdAt: isoOf(t.createdAt) as string,
    updatedAt: isoOf(t.updatedAt) as string,
  };
}

export function presentEventType(type: string, e: EventTypeRecord) {
  return {
    type,
    version: e.version,
    payloadSchema: e.payloadSchema ?? null,
    retentionMs: e.retentionMs ?? null,
    versions: e.versions.map((v) => ({
      version: v.version,
      at: isoOf(v.at) as string,
      payloadSchema: v.payloadSchema ?? null,
      retentionMs: v.retentionMs ?? null,
    })),
  };
}

/** `adm_<first 12 hex digits of sha256(token)>`: names the admin credential in the audit trail. */
export function adminActorId(token: string): string {
  return `adm_${hash("sha256", token, "hex").slice(0, 12)}`;
}

/** The audit actor of a request the admin hook let through. */
export function actorOf(request: { headers: Record<string, string | string[] | undefined> }): string {
  const header = request.headers.authorization;
  const token = typeof header === "string" ? (/^Bearer +(\S+) *$/i.exec(header)?.[1] ?? "") : "";
  return adminActorId(token);
}

/** What every admin route may answer besides its own. */
export const ADMIN_ERRORS = errorResponses(400, 401, 404, 503);

/** The OpenAPI fields every admin route shares. */
export function adminRoute(operationId: string, summary: string) {
  return { operationId, tags: ["admin"], summary, security: [{ adminToken: [] }] };
}
