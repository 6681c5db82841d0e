/**
 * The config file as the registry's declarative seed (docs/api.md, Admin):
 *
 * - at start (`seed`): an entry whose config form differs from the one the file held at
 *   the last seed (or that is new) is written as the file has it; an entry the file had
 *   and has no more is removed; every other entry keeps what the API made of it;
 * - `admin apply` (`apply`): the registry becomes the file (entries not in it removed).
 *
 * An entry written from the file keeps what the file has no form of: `disabled`, `limits`,
 * `createdAt`, and a producer's credentials made through the API (and the expiry a rotation
 * gave the file's own).
 *
 * Both plan one commit at the snapshot's version; the diff lines name entries by kind and
 * name (a key by its id), never a secret.
 */
import type { Config } from "../config.js";
import { canonicalJson } from "../encoding.js";
import {
  type CredentialRecord,
  EVENT_TYPE_VERSIONS_KEPT,
  type EventTypeRecord,
  type HostKeyRecord,
  type ProducerRecord,
  type RecordKind,
  recordField,
  type TenantRecord,
} from "../formats/registry-records.js";
import type { RegistryOp, RegistrySnapshot } from "./registry-store.js";
import { keyHash, type SecretKey } from "./secret-key.js";
import { hostKeyIdOfHash, producerKeyIdOfHash } from "./view.js";

export type SeedMode = "seed" | "apply";

export interface PlannedChange {
  sign: "+" | "~" | "-";
  kind: RecordKind;
  name: string;
}

export interface SeedPlan {
  changes: PlannedChange[];
  ops: RegistryOp[];
}

const KIND_NAMES: Record<RecordKind, string> = { t: "tenant", h: "hostkey", p: "producer", e: "eventtype" };

/** `+ tenant acme`, `~ producer acme/billing`, `- hostkey acme/hk_…`. */
export function describeChange(c: PlannedChange, snap?: RegistrySnapshot): string {
  let name = c.name;
  if (c.kind === "h") {
    const tenant = snap?.records.hostKeys.get(c.name)?.tenant;
    if (tenant) name = `${tenant}/${c.name}`;
  }
  return `${c.sign} ${KIND_NAMES[c.kind]} ${name}`;
}

interface Desired {
  kind: RecordKind;
  name: string;
  fp: string;
  build(existing: unknown, now: number): unknown;
}

/** The id of an HMAC secret given by a config file: from its MAC under the registry key. */
function secretIdOf(key: SecretKey, secret: string | null): string {
  return secret === null ? "" : `ps_${key.mac(secret).slice(0, 16)}`;
}

function openOrNull(key: SecretKey, enc: string): string | null {
  try {
    return key.decrypt(enc);
  } catch {
    return null;
  }
}

/**
 * A producer's credentials after a seed: the file's (each keeping the `createdAt` and
 * `expiresAt` it had, an expiry being a rotation through the API), then the ones made
 * through the API (an id not derived from its own value: `fromFile` false), kept.
 */
function withApiMade(
  fromConfig: CredentialRecord[],
  old: readonly CredentialRecord[] | undefined,
  fromFile: (c: CredentialRecord) => boolean,
): CredentialRecord[] {
  const before = new Map((old ?? []).map((c) => [c.id, c]));
  const file = fromConfig.map((c) => {
    const was = before.get(c.id);
    if (!was) return c;
    return { ...c, createdAt: was.createdAt, ...(was.expiresAt !== undefined ? { expiresAt: was.expiresAt } : {}) };
  });
  const ids = new Set(file.map((c) => c.id));
  return [...file, ...(old ?? []).filter((c) => !ids.has(c.id) && !fromFile(c))];
}

function desiredEntries(
  config: Pick<Config, "tenants" | "eventTypes">,
  key: SecretKey,
  snap: RegistrySnapshot,
): Desired[] {
  const out: Desired[] = [];
  const fp = (kind: string, name: string, form: unknown) => key.mac(canonicalJson([kind, name, form ?? null]));
  for (const [tenant, t] of Object.entries(config.tenants)) {
    const form = { webhook: t.webhook ?? null, continuationGroups: t.continuationGroups ?? null };
    out.push({
      kind: "t",
      name: tenant,
      fp: fp("t", tenant, form),
      build: (existing, now): TenantRecord => {
        const old = existing as TenantRecord | undefined;
        return {
          ...(t.webhook ? { webhook: { url: t.webhook.url, enc: key.encrypt(t.webhook.secret) } } : {}),
          ...(t.continuationGroups ? { groups: t.continuationGroups } : {}),
          ...(old?.limits ? { limits: old.limits } : {}),
          ...(old?.disabled ? { disabled: true } : {}),
          createdAt: old?.createdAt ?? now,
          updatedAt: now,
          fp: fp("t", tenant, form),
        };
      },
    });
    for (const hostKey of t.hostKeys) {
      // an earlier version's record (plain SHA-256, id from it) keeps its form: a new id would
      // bring back a key the API revoked
      const legacy = keyHash(hostKey);
      const legacyId = hostKeyIdOfHash(legacy);
      const isLegacy = snap.seed.has(recordField("h", legacyId)) || snap.records.hostKeys.has(legacyId);
      const digest = isLegacy ? { hash: legacy } : { mac: key.mac(hostKey) };
      const id = isLegacy ? legacyId : hostKeyIdOfHash(key.mac(hostKey));
      const form = isLegacy ? { tenant, hash: legacy } : { tenant, mac: digest.mac };
      out.push({
        kind: "h",
        name: id,
        fp: fp("h", id, form),
        build: (existing, now): HostKeyRecord => ({
          tenant,
          ...digest,
          createdAt: (existing as HostKeyRecord | undefined)?.createdAt ?? now,
          fp: fp("h", id, form),
        }),
      });
    }
    for (const [producer, p] of Object.entries(t.producers)) {
      const name = `${tenant}/${producer}`;
      out.push({
        kind: "p",
        name,
        fp: fp("p", name, p),
        build: (existing, now): ProducerRecord => {
          const old = existing as ProducerRecord | undefined;
          return {
            eventTypes: [...p.eventTypes],
            ...(p.rateLimitPerSec !== undefined ? { rateLimitPerSec: p.rateLimitPerSec } : {}),
            ...(old?.limits ? { limits: old.limits } : {}),
            ...(old?.disabled ? { disabled: true } : {}),
            keys: withApiMade(
              p.keys.map((k) => {
                // an earlier version's credential (plain SHA-256) keeps its form and id
                const hash = keyHash(k);
                const legacyId = producerKeyIdOfHash(hash);
                if (old?.keys.some((c) => c.id === legacyId)) return { id: legacyId, hash, createdAt: now };
                const mac = key.mac(k);
                return { id: producerKeyIdOfHash(mac), mac, createdAt: now };
              }),
              old?.keys,
              (c) => {
                const d = c.mac ?? c.hash;
                return d !== undefined && c.id === producerKeyIdOfHash(d);
              },
            ),
            secrets: withApiMade(
              p.secrets.map((s) => ({ id: secretIdOf(key, s), enc: key.encrypt(s), createdAt: now })),
              old?.secrets,
              (c) => c.enc !== undefined && c.id === secretIdOf(key, openOrNull(key, c.enc)),
            ),
            createdAt: old?.createdAt ?? now,
            updatedAt: now,
            fp: fp("p", name, p),
          };
        },
      });
    }
  }
  for (const [type, e] of Object.entries(config.eventTypes)) {
    out.push({
      kind: "e",
      name: type,
      fp: fp("e", type, e),
      build: (existing, now): EventTypeRecord =>
        nextEventTypeVersion(
          existing as EventTypeRecord | undefined,
          e.payloadSchema,
          e.retentionMs,
          now,
          fp("e", type, e),
        ),
    });
  }
  return out;
}

/**
 * The record of an event type after a definition: a new version when the schema or the
 * retention differs from the newest one, else the same version.
 */
export function nextEventTypeVersion(
  old: EventTypeRecord | undefined,
  payloadSchema: Record<string, unknown> | undefined,
  retentionMs: number | undefined,
  now: number,
  fp?: string,
): EventTypeRecord {
  const same =
    old !== undefined &&
    canonicalJson(old.payloadSchema ?? null) === canonicalJson(payloadSchema ?? null) &&
    old.retentionMs === retentionMs;
  const version = same ? old.version : (old?.version ?? 0) + 1;
  const def = {
    ...(payloadSchema ? { payloadSchema } : {}),
    ...(retentionMs !== undefined ? { retentionMs } : {}),
  };
  const versions = same ? old.versions : [...(old?.versions ?? []), { version, at: now, ...def }];
  return {
    version,
    ...def,
    versions: versions.slice(-EVENT_TYPE_VERSIONS_KEPT),
    ...(fp !== undefined ? { fp } : {}),
  };
}

function recordOf(snap: RegistrySnapshot, kind: RecordKind, name: string): { fp?: string } | undefined {
  const r = snap.records;
  const map = kind === "t" ? r.tenants : kind === "p" ? r.producers : kind === "h" ? r.hostKeys : r.eventTypes;
  return map.get(name);
}

function namesOf(snap: RegistrySnapshot): Array<[RecordKind, string]> {
  const r = snap.records;
  return [
    ...[...r.tenants.keys()].map((n) => ["t", n] as [RecordKind, string]),
    ...[...r.hostKeys.keys()].map((n) => ["h", n] as [RecordKind, string]),
    ...[...r.producers.keys()].map((n) => ["p", n] as [RecordKind, string]),
    ...[...r.eventTypes.keys()].map((n) => ["e", n] as [RecordKind, string]),
  ];
}

/** The changes that bring the registry of `snap` to the file, in `mode`. */
export function planSeed(
  mode: SeedMode,
  config: Pick<Config, "tenants" | "eventTypes">,
  snap: RegistrySnapshot,
  key: SecretKey,
  now: number,
): SeedPlan {
  const changes: PlannedChange[] = [];
  const ops: RegistryOp[] = [];
  const desired = desiredEntries(config, key, snap);
  const wanted = new Set(desired.map((d) => recordField(d.kind, d.name)));
  for (const d of desired) {
    const field = recordField(d.kind, d.name);
    const existing = recordOf(snap, d.kind, d.name);
    const stale = mode === "seed" ? snap.seed.get(field) !== d.fp : existing?.fp !== d.fp;
    if (!stale) continue;
    changes.push({ sign: existing ? "~" : "+", kind: d.kind, name: d.name });
    ops.push({ target: "r", kind: d.kind, name: d.name, value: d.build(existing, now) });
    ops.push({ target: "s", kind: d.kind, name: d.name, value: d.fp });
  }
  const removed =
    mode === "seed"
      ? [...snap.seed.keys()]
          .filter((f) => !wanted.has(f))
          .map((f) => [f.slice(0, 1), f.slice(2)] as [RecordKind, string])
      : namesOf(snap).filter(([k, n]) => !wanted.has(recordField(k, n)));
  for (const [kind, name] of removed) {
    if (recordOf(snap, kind, name)) changes.push({ sign: "-", kind, name });
    ops.push({ target: "r", kind, name, value: null });
    ops.push({ target: "s", kind, name, value: null });
  }
  if (mode === "apply") {
    for (const f of snap.seed.keys()) {
      if (!wanted.has(f)) ops.push({ target: "s", kind: f.slice(0, 1) as RecordKind, name: f.slice(2), value: null });
    }
  }
  return { changes, ops };
}
