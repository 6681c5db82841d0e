/**
 * What a process holds of the registry: every tenant, producer, host key and event type,
 * decoded, secrets decrypted (in memory only), and the config-shaped projection the
 * other parts read (`config.tenants`, `config.eventTypes`). Built from the stored
 * records, or straight from a config file (no registry: the static view).
 */
import type { ContinuationGroups } from "@rendezvous/protocol";
import type { Config, EventTypeConfig, TenantConfig } from "../config.js";
import { decodeRecord, type Limits, type RecordKind, type RegistryRecords } from "../formats/registry-records.js";
import { keyHash, type SecretKey } from "./secret-key.js";

/** A bearer or host key: its digest only, an HMAC under the secret key or a plain SHA-256. */
export interface KeyView {
  readonly id: string;
  /** hex digest of the key, of `form` */
  readonly hash: string;
  readonly form: DigestForm;
  readonly expiresAt: number | null;
}

/** `mac`: HMAC-SHA256 under the secret key (RegistryView.mac); `sha256`: plain (earlier records, a config file's static view). */
export type DigestForm = "mac" | "sha256";

/** The digest of a stored key record, or undefined when it has none. */
export function digestOf(r: {
  mac?: string | undefined;
  hash?: string | undefined;
}): { hash: string; form: DigestForm } | undefined {
  if (r.mac !== undefined) return { hash: r.mac, form: "mac" };
  if (r.hash !== undefined) return { hash: r.hash, form: "sha256" };
  return undefined;
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
  readonly hostKeys: readonly HostKeyView[];
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
  readonly eventTypes: ReadonlyMap<string, EventTypeView>;
  /** HMAC-SHA256 hex under the secret key: the digest of `mac` keys (absent: no key, the static view) */
  readonly mac?: ((text: string) => string) | undefined;
}

/** What a change touched: the tenants (their settings, producers or host keys) and event types. */
export interface ViewChange {
  readonly tenants: ReadonlySet<string>;
  readonly eventTypes: ReadonlySet<string>;
}

/**
 * The records a process holds, with per-tenant indexes of its producers and host keys, so
 * that a change rebuilds only the tenants it touched ({@link patchView}).
 */
export class RecordSet {
  readonly records: RegistryRecords;
  readonly #producersOf = new Map<string, Set<string>>();
  readonly #hostKeysOf = new Map<string, Set<string>>();

  constructor(records: RegistryRecords) {
    this.records = records;
    for (const field of records.producers.keys()) this.#link(this.#producersOf, tenantOfField(field), field);
    for (const [id, h] of records.hostKeys) this.#link(this.#hostKeysOf, h.tenant, id);
  }

  #link(index: Map<string, Set<string>>, tenant: string, name: string): void {
    const set = index.get(tenant) ?? new Set<string>();
    index.set(tenant, set);
    set.add(name);
  }

  #unlink(index: Map<string, Set<string>>, tenant: string, name: string): void {
    index.get(tenant)?.delete(name);
  }

  /**
   * Sets (or deletes, `raw` "") one record field; says which tenant or event type it touched.
   * A value that does not decode deletes the record and is named in `bad`.
   */
  apply(field: string, raw: string, touched: { tenants: Set<string>; eventTypes: Set<string> }, bad: string[]): void {
    const kind = field.slice(0, 1) as RecordKind;
    const name = field.slice(2);
    const decoded = raw === "" ? null : decodeRecord(field, raw);
    if (raw !== "" && decoded === null) bad.push(field);
    const r = this.records;
    if (kind === "t") {
      touched.tenants.add(name);
      if (decoded?.kind === "t") r.tenants.set(name, decoded.record);
      else r.tenants.delete(name);
    } else if (kind === "p") {
      const tenant = tenantOfField(name);
      touched.tenants.add(tenant);
      if (decoded?.kind === "p") {
        r.producers.set(name, decoded.record);
        this.#link(this.#producersOf, tenant, name);
      } else {
        r.producers.delete(name);
        this.#unlink(this.#producersOf, tenant, name);
      }
    } else if (kind === "h") {
      const old = r.hostKeys.get(name);
      if (old) {
        touched.tenants.add(old.tenant);
        this.#unlink(this.#hostKeysOf, old.tenant, name);
      }
      if (decoded?.kind === "h") {
        r.hostKeys.set(name, decoded.record);
        this.#link(this.#hostKeysOf, decoded.record.tenant, name);
        touched.tenants.add(decoded.record.tenant);
      } else r.hostKeys.delete(name);
    } else if (kind === "e") {
      touched.eventTypes.add(name);
      if (decoded?.kind === "e") r.eventTypes.set(name, decoded.record);
      else r.eventTypes.delete(name);
    }
  }

  producersOf(tenant: string): Iterable<string> {
    return this.#producersOf.get(tenant) ?? [];
  }

  hostKeysOf(tenant: string): Iterable<string> {
    return this.#hostKeysOf.get(tenant) ?? [];
  }
}

function tenantOfField(producerField: string): string {
  return producerField.slice(0, producerField.indexOf("/"));
}

/** Decrypts, naming what does not decrypt (the caller logs the ids, never a value). */
function opener(key: SecretKey, undecryptable: string[]) {
  return (what: string, enc: string): string | undefined => {
    try {
      return key.decrypt(enc);
    } catch {
      undecryptable.push(what);
      return undefined;
    }
  };
}

function tenantView(
  name: string,
  set: RecordSet,
  open: (what: string, enc: string) => string | undefined,
): TenantView | undefined {
  const t = set.records.tenants.get(name);
  if (!t) return undefined;
  const producers = new Map<string, ProducerView>();
  for (const field of set.producersOf(name)) {
    const p = set.records.producers.get(field);
    if (!p) continue;
    const id = field.slice(name.length + 1);
    const secrets: SecretView[] = [];
    for (const s of p.secrets) {
      const secret = s.enc === undefined ? undefined : open(`${field}/${s.id}`, s.enc);
      if (secret !== undefined) secrets.push({ id: s.id, secret, expiresAt: s.expiresAt ?? null });
    }
    producers.set(id, {
      tenant: name,
      id,
      eventTypes: p.eventTypes,
      rateLimitPerSec: p.rateLimitPerSec,
      limits: p.limits,
      disabled: p.disabled === true,
      keys: p.keys.flatMap((k) => {
        const d = digestOf(k);
        return d ? [{ id: k.id, ...d, expiresAt: k.expiresAt ?? null }] : [];
      }),
      secrets,
    });
  }
  const hostKeys: HostKeyView[] = [];
  for (const id of set.hostKeysOf(name)) {
    const h = set.records.hostKeys.get(id);
    const d = h && digestOf(h);
    if (h && d) hostKeys.push({ id, tenant: name, ...d, expiresAt: h.expiresAt ?? null });
  }
  const secret = t.webhook ? open(`${name}/webhook`, t.webhook.enc) : undefined;
  return {
    name,
    disabled: t.disabled === true,
    webhook: t.webhook && secret !== undefined ? { url: t.webhook.url, secret } : undefined,
    continuationGroups: t.groups,
    limits: t.limits,
    producers,
    hostKeys,
  };
}

function eventTypeView(e: { version: number; payloadSchema?: Record<string, unknown>; retentionMs?: number }) {
  return { version: e.version, payloadSchema: e.payloadSchema, retentionMs: e.retentionMs };
}

/** The view of a record set, whole. */
export function viewOfSet(
  version: number,
  set: RecordSet,
  key: SecretKey,
): { view: RegistryView; undecryptable: string[] } {
  const undecryptable: string[] = [];
  const open = opener(key, undecryptable);
  const tenants = new Map<string, TenantView>();
  for (const name of set.records.tenants.keys()) tenants.set(name, tenantView(name, set, open) as TenantView);
  const eventTypes = new Map<string, EventTypeView>();
  for (const [type, e] of set.records.eventTypes) eventTypes.set(type, eventTypeView(e));
  return { view: { version, tenants, eventTypes, mac: macOf(key) }, undecryptable };
}

function macOf(key: SecretKey): (text: string) => string {
  return (text) => key.mac(text);
}

/** The view after a change: `old` with the touched tenants and event types rebuilt from `set`. */
export function patchView(
  old: RegistryView,
  version: number,
  set: RecordSet,
  key: SecretKey,
  change: ViewChange,
): { view: RegistryView; undecryptable: string[] } {
  const undecryptable: string[] = [];
  const open = opener(key, undecryptable);
  const tenants = new Map(old.tenants);
  for (const name of change.tenants) {
    const t = tenantView(name, set, open);
    if (t) tenants.set(name, t);
    else tenants.delete(name);
  }
  const eventTypes = new Map(old.eventTypes);
  for (const type of change.eventTypes) {
    const e = set.records.eventTypes.get(type);
    if (e) eventTypes.set(type, eventTypeView(e));
    else eventTypes.delete(type);
  }
  return { view: { version, tenants, eventTypes, mac: old.mac ?? macOf(key) }, undecryptable };
}

/** The view of stored records (a RecordSet of them, whole). */
export function viewOfRecords(
  version: number,
  records: RegistryRecords,
  key: SecretKey,
): { view: RegistryView; undecryptable: string[] } {
  return viewOfSet(version, new RecordSet(records), key);
}

/** The static view of a config file: what every process used before the registry. */
export function viewOfConfig(config: Pick<Config, "tenants" | "eventTypes">): RegistryView {
  const tenants = new Map<string, TenantView>();
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
        keys: p.keys.map((k, i) => ({ id: `key-${i}`, hash: keyHash(k), form: "sha256" as const, expiresAt: null })),
        secrets: p.secrets.map((s, i) => ({ id: `secret-${i}`, secret: s, expiresAt: null })),
      });
    }
    const hostKeys = t.hostKeys.map((k) => {
      const hash = keyHash(k);
      return { id: hostKeyIdOfHash(hash), tenant: name, hash, form: "sha256" as const, expiresAt: null };
    });
    tenants.set(name, {
      name,
      disabled: false,
      webhook: t.webhook,
      continuationGroups: t.continuationGroups,
      limits: undefined,
      producers,
      hostKeys,
    });
  }
  const eventTypes = new Map<string, EventTypeView>();
  for (const [type, e] of Object.entries(config.eventTypes)) {
    eventTypes.set(type, { version: 1, payloadSchema: e.payloadSchema, retentionMs: e.retentionMs });
  }
  return { version: 0, tenants, eventTypes };
}

/** The id of a host key given by a config file: from its digest (which is stored anyway). */
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
  for (const [name, t] of view.tenants) tenants[name] = configOfTenant(t);
  return { tenants, eventTypes: configEventTypes(view) };
}

/** The config form of a view's event types. */
export function configEventTypes(view: RegistryView): Config["eventTypes"] {
  const eventTypes: Record<string, EventTypeConfig> = {};
  for (const [type, e] of view.eventTypes) {
    eventTypes[type] = {
      ...(e.payloadSchema ? { payloadSchema: e.payloadSchema } : {}),
      ...(e.retentionMs !== undefined ? { retentionMs: e.retentionMs } : {}),
    };
  }
  return eventTypes;
}

/** The config form of one tenant (credentials left out: they are read from the view). */
export function configOfTenant(t: TenantView): TenantConfig {
  const producers: TenantConfig["producers"] = {};
  for (const [id, p] of t.producers) {
    producers[id] = {
      secrets: [],
      keys: [],
      eventTypes: [...p.eventTypes],
      ...(p.rateLimitPerSec !== undefined ? { rateLimitPerSec: p.rateLimitPerSec } : {}),
    };
  }
  return {
    hostKeys: [],
    producers,
    ...(t.webhook ? { webhook: { url: t.webhook.url, secret: t.webhook.secret } } : {}),
    ...(t.continuationGroups ? { continuationGroups: t.continuationGroups } : {}),
  };
}
