/**
 * What a process holds of the registry: every tenant, producer, host key and event type,
 * decoded, secrets decrypted (in memory only), and the config-shaped projection the
 * other parts read (`config.tenants`, `config.eventTypes`). Built from the stored
 * records, or straight from a config file (no registry: the static view).
 */
import type { ContinuationGroups } from "@rendezvous/protocol";
import type { Config, EventTypeConfig, TenantConfig } from "../config.js";
import type { Limits, RegistryRecords } from "../formats/registry-records.js";
import { keyHash, type SecretKey } from "./secret-key.js";

/** A bearer or host key: its hash only. */
export interface KeyView {
  readonly id: string;
  readonly hash: string;
  readonly expiresAt: number | null;
}

export interface HostKeyView extends KeyView {
  readonly tenant: string;
}

/** An HMAC secret, decrypted. */
export interface SecretView {
  readonly id: string;
  readonly secret: string;
  readonly expiresAt: number | null;
}

export interface ProducerView {
  readonly tenant: string;
  readonly id: string;
  readonly eventTypes: readonly string[];
  readonly rateLimitPerSec: number | undefined;
  readonly limits: Limits | undefined;
  readonly disabled: boolean;
  readonly keys: readonly KeyView[];
  readonly secrets: readonly SecretView[];
}

export interface TenantView {
  readonly name: string;
  readonly disabled: boolean;
  readonly webhook: { readonly url: string; readonly secret: string } | undefined;
  readonly continuationGroups: ContinuationGroups | undefined;
  readonly limits: Limits | undefined;
  readonly producers: ReadonlyMap<string, ProducerView>;
}

export interface EventTypeView {
  readonly version: number;
  readonly payloadSchema: Record<string, unknown> | undefined;
  readonly retentionMs: number | undefined;
}

export interface RegistryView {
  /** the registry version it was read at (0: the static view of a config file) */
  readonly version: number;
  readonly tenants: ReadonlyMap<string, TenantView>;
  readonly hostKeys: readonly HostKeyView[];
  readonly eventTypes: ReadonlyMap<string, EventTypeView>;
}

/**
 * The view of stored records. A secret that does not decrypt (another key) is left out
 * and named in `undecryptable` (the caller logs the ids, never a value).
 */
export function viewOfRecords(
  version: number,
  records: RegistryRecords,
  key: SecretKey,
): { view: RegistryView; undecryptable: string[] } {
  const undecryptable: string[] = [];
  const open = (what: string, enc: string): string | undefined => {
    try {
      return key.decrypt(enc);
    } catch {
      undecryptable.push(what);
      return undefined;
    }
  };
  const producersOf = new Map<string, Map<string, ProducerView>>();
  for (const [field, p] of records.producers) {
    const slash = field.indexOf("/");
    const tenant = field.slice(0, slash);
    const id = field.slice(slash + 1);
    const secrets: SecretView[] = [];
    for (const s of p.secrets) {
      const secret = s.enc === undefined ? undefined : open(`${field}/${s.id}`, s.enc);
      if (secret !== undefined) secrets.push({ id: s.id, secret, expiresAt: s.expiresAt ?? null });
    }
    const view: ProducerView = {
      tenant,
      id,
      eventTypes: p.eventTypes,
      rateLimitPerSec: p.rateLimitPerSec,
      limits: p.limits,
      disabled: p.disabled === true,
      keys: p.keys.flatMap((k) => (k.hash ? [{ id: k.id, hash: k.hash, expiresAt: k.expiresAt ?? null }] : [])),
      secrets,
    };
    const m = producersOf.get(tenant) ?? new Map<string, ProducerView>();
    producersOf.set(tenant, m);
    m.set(id, view);
  }
  const tenants = new Map<string, TenantView>();
  for (const [name, t] of records.tenants) {
    const secret = t.webhook ? open(`${name}/webhook`, t.webhook.enc) : undefined;
    tenants.set(name, {
      name,
      disabled: t.disabled === true,
      webhook: t.webhook && secret !== undefined ? { url: t.webhook.url, secret } : undefined,
      continuationGroups: t.groups,
      limits: t.limits,
      producers: producersOf.get(name) ?? new Map(),
    });
  }
  const hostKeys: HostKeyView[] = [];
  for (const [id, h] of records.hostKeys) {
    if (tenants.has(h.tenant)) hostKeys.push({ id, tenant: h.tenant, hash: h.hash, expiresAt: h.expiresAt ?? null });
  }
  const eventTypes = new Map<string, EventTypeView>();
  for (const [type, e] of records.eventTypes) {
    eventTypes.set(type, { version: e.version, payloadSchema: e.payloadSchema, retentionMs: e.retentionMs });
  }
  return { view: { version, tenants, hostKeys, eventTypes }, undecryptable };
}

/** The static view of a config file: what every process used before the registry. */
export function viewOfConfig(config: Pick<Config, "tenants" | "eventTypes">): RegistryView {
  const tenants = new Map<string, TenantView>();
  const hostKeys: HostKeyView[] = [];
  for (const [name, t] of Object.entries(config.tenants)) {
    const producers = new Map<string, ProducerView>();
    for (const [id, p] of Object.entries(t.producers)) {
      producers.set(id, {
        tenant: name,
        id,
        eventTypes: p.eventTypes,
        rateLimitPerSec: p.rateLimitPerSec,
        limits: undefined,
        disabled: false,
        keys: p.keys.map((k, i) => ({ id: `key-${i}`, hash: keyHash(k), expiresAt: null })),
        secrets: p.secrets.map((s, i) => ({ id: `secret-${i}`, secret: s, expiresAt: null })),
      });
    }
    tenants.set(name, {
      name,
      disabled: false,
      webhook: t.webhook,
      continuationGroups: t.continuationGroups,
      limits: undefined,
      producers,
    });
    for (const k of t.hostKeys) {
      const hash = keyHash(k);
      hostKeys.push({ id: hostKeyIdOfHash(hash), tenant: name, hash, expiresAt: null });
    }
  }
  const eventTypes = new Map<string, EventTypeView>();
  for (const [type, e] of Object.entries(config.eventTypes)) {
    eventTypes.set(type, { version: 1, payloadSchema: e.payloadSchema, retentionMs: e.retentionMs });
  }
  return { version: 0, tenants, hostKeys, eventTypes };
}

/** The id of a host key given by a config file: from its hash (which is stored anyway). */
export function hostKeyIdOfHash(hash: string): string {
  return `hk_${hash.slice(0, 16)}`;
}

/** The id of a producer key given by a config file. */
export function producerKeyIdOfHash(hash: string): string {
  return `pk_${hash.slice(0, 16)}`;
}

/**
 * The config-shaped tenants and event types of a view, as `config.tenants` and
 * `config.eventTypes` are read by the roles (webhooks, continuation groups, retention,
 * the tenant names). Credentials are not in it: they are read from the view itself.
 */
export function configOfView(view: RegistryView): Pick<Config, "tenants" | "eventTypes"> {
  const tenants: Record<string, TenantConfig> = {};
  for (const [name, t] of view.tenants) {
    const producers: TenantConfig["producers"] = {};
    for (const [id, p] of t.producers) {
      producers[id] = {
        secrets: [],
        keys: [],
        eventTypes: [...p.eventTypes],
        ...(p.rateLimitPerSec !== undefined ? { rateLimitPerSec: p.rateLimitPerSec } : {}),
      };
    }
    tenants[name] = {
      hostKeys: [],
      producers,
      ...(t.webhook ? { webhook: { url: t.webhook.url, secret: t.webhook.secret } } : {}),
      ...(t.continuationGroups ? { continuationGroups: t.continuationGroups } : {}),
    };
  }
  const eventTypes: Record<string, EventTypeConfig> = {};
  for (const [type, e] of view.eventTypes) {
    eventTypes[type] = {
      ...(e.payloadSchema ? { payloadSchema: e.payloadSchema } : {}),
      ...(e.retentionMs !== undefined ? { retentionMs: e.retentionMs } : {}),
    };
  }
  return { tenants, eventTypes };
}
