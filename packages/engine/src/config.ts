import { readFileSync } from "node:fs";
import {
  ContinuationGroups,
  continuationQueues,
  EventType,
  EventTypePattern,
  Name,
  RendezvousError,
} from "@rendezvous/protocol";
import { z } from "zod";

const DAY = 86_400_000;

/** An allowed event type of a producer: an exact type, or a prefix ending in `*`. */
export const ProducerConfig = z
  .strictObject({
    /** HMAC-SHA256 secrets; several may be active during rotation. */
    secrets: z.array(z.string().min(1)).default([]),
    /** Bearer keys. */
    keys: z.array(z.string().min(1)).default([]),
    /** Types it may send; a trailing `*` matches a prefix. */
    eventTypes: z.array(EventTypePattern).min(1),
    /** Events per second; absent = no limit. */
    rateLimitPerSec: z.number().positive().optional(),
  })
  .refine((p) => p.secrets.length + p.keys.length > 0, {
    message: "a producer needs at least one of secrets or keys",
  });
export type ProducerConfig = z.infer<typeof ProducerConfig>;

/**
 * Quotas of a tenant (docs/api.md, Quotas). At the top level: the defaults; in a tenant:
 * overrides field by field, `null` = no limit for that tenant. Absent = no limit.
 */
export const QuotasConfig = z.strictObject({
  /** Most waits in state `waiting`; at it, registrations are `429 quota_exceeded`. */
  waitingWaits: z.int().min(0).nullable().optional(),
  /** Most events buffered unmatched; at it, producer requests are `429 quota_exceeded`. */
  bufferedEvents: z.int().min(0).nullable().optional(),
  /** Host-route requests per second, over every API process; over it `429 rate_limited`. */
  hostRequestsPerSec: z.number().positive().nullable().optional(),
  /** Events per second of all the tenant's producers, over every API process; over it `429 rate_limited`. */
  producerEventsPerSec: z.number().positive().nullable().optional(),
});
export type QuotasConfig = z.infer<typeof QuotasConfig>;

export const TenantConfig = z.strictObject({
  /** Bearer keys of the tenant's hosts. */
  hostKeys: z.array(z.string().min(1)).default([]),
  /** Optional signed webhook for continuations. */
  webhook: z.strictObject({ url: z.url(), secret: z.string().min(1) }).optional(),
  producers: z.record(Name, ProducerConfig).default({}),
  /**
   * Named continuation groups: event types routed to a queue of their own,
   * `continuations.<tenant>.<group>`, claimed with `"group"` (docs/api.md, Continuations
   * over HTTP). The first group (in order) whose patterns match a wait's `eventType` takes
   * its continuation; others stay in `continuations.<tenant>`. Absent = no groups.
   */
  continuationGroups: ContinuationGroups.optional(),
  /** This tenant's quotas: override the top-level `quotas` field by field. */
  quotas: QuotasConfig.optional(),
});
export type TenantConfig = z.infer<typeof TenantConfig>;

export const EventTypeConfig = z.strictObject({
  /** JSON Schema of the payload; absent = any JSON object. */
  payloadSchema: z.record(z.string(), z.unknown()).optional(),
  /** How long an unmatched event stays buffered; defaults to the global retentionMs. */
  retentionMs: z.int().positive().optional(),
});
export type EventTypeConfig = z.infer<typeof EventTypeConfig>;

/** The config file (docs/api.md, Config file). */
export const Config = z.strictObject({
  /**
   * Partition count; set once per deployment.
   * @defaultValue 16
   */
  partitions: z.int().min(1).max(16384).default(16),
  /** Token that reads every tenant and opens /admin/queues. */
  adminToken: z.string().min(1).optional(),
  /**
   * How long unmatched events stay buffered and settled waits are kept.
   * @defaultValue 86400000 (1 day)
   */
  retentionMs: z.int().positive().default(DAY),
  /**
   * How long an event key is remembered for dedup.
   * @defaultValue 604800000 (7 days)
   */
  dedupWindowMs: z
    .int()
    .positive()
    .default(7 * DAY),
  /**
   * Largest event body in bytes.
   * @defaultValue 65536
   */
  maxPayloadBytes: z
    .int()
    .positive()
    .max(16 * 1024 * 1024)
    .default(65_536),
  /**
   * Largest wait `metadata` in bytes (its JSON, UTF-8); a registration over it is
   * `413 payload_too_large` and stores nothing. At most 1 MiB, the bound of a host body.
   * @defaultValue 65536
   */
  maxMetadataBytes: z
    .int()
    .positive()
    .max(1024 * 1024)
    .default(65_536),
  /**
   * Most index entries one list request (`GET /v1/waits`, the console's listing) examines;
   * past it the page ends with a `nextCursor`, holding fewer waits than `limit` or none.
   * @defaultValue 1000
   */
  maxListScan: z.int().min(1).max(100_000).default(1000),
  /**
   * Most bytes of wait records one list request reads, and most bytes (serialized) its
   * page of waits holds; a page always holds at least one wait, whatever its size.
   * @defaultValue 2097152 (2 MiB)
   */
  maxListPageBytes: z
    .int()
    .min(1024)
    .max(64 * 1024 * 1024)
    .default(2 * 1024 * 1024),
  /**
   * Most bytes of wait records all list requests of one API process hold at once (read,
   * not yet answered). A request that holds some ends its page early when there is no
   * room; one that holds none waits its turn, up to 10 s, then gets `503 unavailable`
   * (reason `list_busy`) with `Retry-After`.
   * @defaultValue 4194304 (4 MiB)
   */
  maxListBytesInFlight: z
    .int()
    .min(1024)
    .max(1024 * 1024 * 1024)
    .default(4 * 1024 * 1024),
  /**
   * Idle time after which another matcher claims a dead matcher's entries.
   * @defaultValue 5000
   */
  claimIdleMs: z.int().positive().default(5000),
  /**
   * Age of unprocessed events at which `explain` says `backlog`.
   * @defaultValue 1000
   */
  backlogThresholdMs: z.int().positive().default(1000),
  /**
   * Furthest a deadline may lie ahead.
   * @defaultValue 31536000000 (365 days)
   */
  maxTimeoutMs: z
    .int()
    .positive()
    .default(365 * DAY),
  /**
   * Most waits one event resolves (fan-out cap).
   * @defaultValue 100
   */
  fanoutCap: z.int().min(1).max(10_000).default(100),
  /** Default quotas of every tenant (docs/api.md, Quotas); absent = no limits. */
  quotas: QuotasConfig.default({}),
  /**
   * Most time between two recounts of a tenant's quota counts by the scheduler (at most
   * 200 tenants are recounted a second, so with many tenants a round takes longer).
   * @defaultValue 60000
   */
  quotaRecountMs: z.int().min(1000).default(60_000),
  /**
   * How long a completed continuation job stays in its queue (BullMQ's `removeOnComplete`
   * age, rounded up to a second): a re-dispatch after a crash within it finds its twin.
   * @defaultValue 86400000 (1 day)
   */
  continuationRetentionMs: z.int().min(60_000).default(DAY),
  /**
   * Time after its completion at which the scheduler reduces a completed continuation job
   * to a stub (its key, name, timestamps and attempts stay; the Wait goes). Covers the clock
   * skew between the hosts' workers, which stamp the completion, and the scheduler. A value
   * at or over `continuationRetentionMs` keeps jobs whole until they are removed.
   * @defaultValue 10000
   */
  continuationCompactAfterMs: z.int().min(0).default(10_000),
  /**
   * The address token holders reach this API at (`http:`/`https:`); with it an issued
   * completion token comes with its complete URL. A trailing `/` is dropped.
   */
  publicUrl: z
    .url({ protocol: /^https?$/ })
    .transform((u) => u.replace(/\/+$/, ""))
    .optional(),
  /**
   * Token route requests one client address may send per second (per API process).
   * @defaultValue 20
   */
  tokenRateLimitPerAddressPerSec: z.int().min(1).max(1_000_000).default(20),
  /**
   * Token route requests naming one wait per second (per API process).
   * @defaultValue 10
   */
  tokenRateLimitPerWaitPerSec: z.int().min(1).max(1_000_000).default(10),
  tenants: z.record(Name, TenantConfig).default({}),
  eventTypes: z.record(EventType, EventTypeConfig).default({}),
});
export type Config = z.infer<typeof Config>;
export type ConfigInput = z.input<typeof Config>;

/** One line per problem, each naming the field by its path. */
function describeIssues(error: z.ZodError): string[] {
  return error.issues.map((issue) => {
    const path = issue.path.length ? issue.path.map(String).join(".") : "(root)";
    return `${path}: ${issue.message}`;
  });
}

/**
 * The admin token reads every tenant: a credential handed to a tenant's hosts or
 * producers (or its webhook secret) that equals it would make its holder an admin.
 * The message names the field, never the value.
 * @throws RendezvousError `invalid_config`
 */
function refuseAdminTokenReuse(config: Config): void {
  const admin = config.adminToken;
  if (admin === undefined) return;
  const fields: Array<[string, readonly string[]]> = [];
  for (const [tenant, t] of Object.entries(config.tenants)) {
    fields.push([`tenants.${tenant}.hostKeys`, t.hostKeys]);
    for (const [producer, p] of Object.entries(t.producers)) {
      fields.push([`tenants.${tenant}.producers.${producer}.keys`, p.keys]);
      fields.push([`tenants.${tenant}.producers.${producer}.secrets`, p.secrets]);
    }
    if (t.webhook) fields.push([`tenants.${tenant}.webhook.secret`, [t.webhook.secret]]);
  }
  for (const [path, values] of fields) {
    const i = values.indexOf(admin);
    if (i < 0) continue;
    const field = path.endsWith("webhook.secret") ? path : `${path}.${i}`;
    const problem = `${field}: equals adminToken (its holder would read every tenant); give it a value of its own`;
    throw new RendezvousError("invalid_config", `invalid config: ${problem}`, { problems: [problem] });
  }
}

/**
 * Parses and checks a config object.
 * @throws RendezvousError `invalid_config` naming every bad field
 */
export function parseConfig(input: unknown): Config {
  const result = Config.safeParse(input);
  if (!result.success) {
    const problems = describeIssues(result.error);
    throw new RendezvousError("invalid_config", `invalid config: ${problems.join("; ")}`, { problems });
  }
  const config = result.data;
  refuseAdminTokenReuse(config);
  const seen = new Map<string, string>();
  for (const [tenant, t] of Object.entries(config.tenants)) {
    for (const key of t.hostKeys) {
      const other = seen.get(key);
      if (other) {
        throw new RendezvousError(
          "invalid_config",
          `invalid config: tenants.${tenant}.hostKeys: key also used by ${other}`,
        );
      }
      seen.set(key, `tenants.${tenant}.hostKeys`);
    }
  }
  continuationQueues(config.tenants);
  return config;
}

/** Reads and parses a JSON config file. */
export function loadConfigFile(path: string): Config {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (err) {
    throw new RendezvousError("invalid_config", `cannot read config file ${path}: ${(err as Error).message}`);
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    throw new RendezvousError("invalid_config", `config file ${path} is not valid JSON: ${(err as Error).message}`);
  }
  return parseConfig(json);
}

/** The limits in force for a tenant (null = no limit); Quotas.limits decides them (engine/src/quotas.ts). */
export interface TenantQuotas {
  waitingWaits: number | null;
  bufferedEvents: number | null;
  hostRequestsPerSec: number | null;
  producerEventsPerSec: number | null;
}

/** The buffer retention of an event type. */
export function retentionFor(config: Config, eventType: string): number {
  return config.eventTypes[eventType]?.retentionMs ?? config.retentionMs;
}
