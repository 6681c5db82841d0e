/**
 * The admin operations on the registry (docs/api.md, Admin): each reads a snapshot,
 * computes its records and commits them at the snapshot's version (retrying when another
 * change came first), with its audit entry. Generated keys and secrets are returned once;
 * only their digest (HMAC under the secret key) or ciphertext is stored.
 */
import { randomBytes } from "node:crypto";
import { type ContinuationGroups, continuationQueues, RendezvousError } from "@rendezvous/protocol";
import type {
  CredentialRecord,
  EventTypeRecord,
  HostKeyRecord,
  Limits,
  ProducerRecord,
  RecordKind,
  RegistryRecords,
  TenantRecord,
} from "../formats/registry-records.js";
import type { RegistryOp, RegistrySnapshot, RegistryStore } from "./registry-store.js";
import type { SecretKey } from "./secret-key.js";
import { nextEventTypeVersion } from "./seed.js";

/** What one operation writes and answers. */
interface Mutation<T> {
  ops: RegistryOp[];
  action: string;
  target: string;
  result: T;
}

const put = (kind: RecordKind, name: string, value: unknown): RegistryOp => ({ target: "r", kind, name, value });
const del = (kind: RecordKind, name: string): RegistryOp => ({ target: "r", kind, name, value: null });

function notFound(what: string): RendezvousError {
  return new RendezvousError("not_found", `no such ${what}`);
}

/** A generated credential: `rdv_<kind>_<id>_<secret>`; its id is `<kind>_<id>`. */
function generate(kind: "hk" | "pk" | "ps"): { id: string; value: string } {
  const id = `${kind}_${randomBytes(8).toString("hex")}`;
  return { id, value: `rdv_${id}_${randomBytes(32).toString("base64url")}` };
}

export interface TenantInput {
  name: string;
  webhook?: { url: string; secret: string } | undefined;
  continuationGroups?: ContinuationGroups | undefined;
  limits?: Limits | undefined;
}

export interface TenantPatch {
  disabled?: boolean | undefined;
  webhook?: { url: string; secret: string } | null | undefined;
  continuationGroups?: ContinuationGroups | null | undefined;
  limits?: Limits | null | undefined;
}

export interface ProducerInput {
  id: string;
  eventTypes: string[];
  rateLimitPerSec?: number | undefined;
  limits?: Limits | undefined;
  credentials?: Array<"key" | "secret"> | undefined;
}

export interface ProducerPatch {
  eventTypes?: string[] | undefined;
  rateLimitPerSec?: number | null | undefined;
  limits?: Limits | null | undefined;
  disabled?: boolean | undefined;
}

export class RegistryAdmin {
  readonly store: RegistryStore;
  readonly #key: SecretKey;
  readonly #now: () => number;

  constructor(store: RegistryStore, key: SecretKey, now: () => number = Date.now) {
    this.store = store;
    this.#key = key;
    this.#now = now;
  }

  /** Runs `change` on a fresh snapshot until it commits (a few tries). */
  async #mutate<T>(
    actor: string,
    change: (snap: RegistrySnapshot, now: number) => Mutation<T>,
  ): Promise<T & { version: number }> {
    for (let attempt = 0; attempt < 8; attempt++) {
      const snap = await this.store.load();
      const m = change(snap, this.#now());
      // nothing to write (the same definition again): no new version, no audit entry
      if (m.ops.length === 0) return { ...m.result, version: snap.version };
      const done = await this.store.commit(snap.version, m.ops, [{ actor, action: m.action, target: m.target }]);
      if (done.ok) return { ...m.result, version: done.version };
    }
    throw new RendezvousError("unavailable", "the registry kept changing; retry", {
      reason: "registry_busy",
      retryAfter: 1,
    });
  }

  async snapshot(): Promise<RegistrySnapshot> {
    return this.store.load();
  }

  /** Refuses continuation groups whose queues would collide once `tenant` has `groups`. */
  #checkGroups(records: RegistryRecords, tenant: string, groups: ContinuationGroups | undefined): void {
    const tenants: Record<string, { continuationGroups?: ContinuationGroups }> = {};
    for (const [name, t] of records.tenants) tenants[name] = t.groups ? { continuationGroups: t.groups } : {};
    tenants[tenant] = groups ? { continuationGroups: groups } : {};
    try {
      continuationQueues(tenants);
    } catch (err) {
      throw new RendezvousError("invalid_request", (err as Error).message, {
        issues: [{ path: ["continuationGroups"], message: (err as Error).message }],
      });
    }
  }

  createTenant(actor: string, input: TenantInput) {
    return this.#mutate(actor, (snap, now) => {
      if (snap.records.tenants.has(input.name)) throw new RendezvousError("already_exists", "the tenant exists");
      this.#checkGroups(snap.records, input.name, input.continuationGroups);
      const record: TenantRecord = {
        ...(input.webhook ? { webhook: { url: input.webhook.url, enc: this.#key.encrypt(input.webhook.secret) } } : {}),
        ...(input.continuationGroups ? { groups: input.continuationGroups } : {}),
        ...(input.limits ? { limits: input.limits } : {}),
        createdAt: now,
        updatedAt: now,
      };
      return {
        ops: [put("t", input.name, record)],
        action: "tenant.create",
        target: input.name,
        result: { name: input.name },
      };
    });
  }

  updateTenant(actor: string, name: string, patch: TenantPatch) {
    return this.#mutate(actor, (snap, now) => {
      const old = snap.records.tenants.get(name);
      if (!old) throw notFound("tenant");
      const { fp: _fp, ...rest } = old;
      const record: TenantRecord = { ...rest, updatedAt: now };
      if (patch.disabled !== undefined) {
        if (patch.disabled) record.disabled = true;
        else delete record.disabled;
      }
      if (patch.webhook === null) delete record.webhook;
      else if (patch.webhook) record.webhook = { url: patch.webhook.url, enc: this.#key.encrypt(patch.webhook.secret) };
      if (patch.continuationGroups === null) delete record.groups;
      else if (patch.continuationGroups) {
        this.#checkGroups(snap.records, name, patch.continuationGroups);
        record.groups = patch.continuationGroups;
      }
      if (patch.limits === null) delete record.limits;
      else if (patch.limits) record.limits = patch.limits;
      return { ops: [put("t", name, record)], action: "tenant.update", target: name, result: { name } };
    });
  }

  /** Removes the tenant, its producers and host keys (its waits and events expire by retention). */
  deleteTenant(actor: string, name: string) {
    return this.#mutate(actor, (snap) => {
      if (!snap.records.tenants.has(name)) throw notFound("tenant");
      const ops = [del("t", name)];
      for (const field of snap.records.producers.keys()) if (field.startsWith(`${name}/`)) ops.push(del("p", field));
      for (const [id, h] of snap.records.hostKeys) if (h.tenant === name) ops.push(del("h", id));
      return { ops, action: "tenant.delete", target: name, result: { name } };
    });
  }

  createHostKey(actor: string, tenant: string) {
    return this.#mutate(actor, (snap, now) => {
      if (!snap.records.tenants.has(tenant)) throw notFound("tenant");
      const { id, value } = generate("hk");
      const record: HostKeyRecord = { tenant, mac: this.#key.mac(value), createdAt: now };
      return {
        ops: [put("h", id, record)],
        action: "hostkey.create",
        target: `${tenant}/${id}`,
        result: { id, key: value },
      };
    });
  }

  /** A new host key; the old one expires after `overlapSeconds`. */
  rotateHostKey(actor: string, tenant: string, oldId: string, overlapSeconds: number) {
    return this.#mutate(actor, (snap, now) => {
      const old = snap.records.hostKeys.get(oldId);
      if (!old || old.tenant !== tenant || !snap.records.tenants.has(tenant)) throw notFound("host key");
      const { id, value } = generate("hk");
      const { fp: _fp, ...rest } = old;
      const expiresAt = Math.min(old.expiresAt ?? Number.POSITIVE_INFINITY, now + overlapSeconds * 1000);
      return {
        ops: [
          put("h", id, { tenant, mac: this.#key.mac(value), createdAt: now }),
          put("h", oldId, { ...rest, expiresAt }),
        ],
        action: "hostkey.rotate",
        target: `${tenant}/${oldId}`,
        result: { id, key: value, rotated: oldId },
      };
    });
  }

  revokeHostKey(actor: string, tenant: string, id: string) {
    return this.#mutate(actor, (snap) => {
      const old = snap.records.hostKeys.get(id);
      if (!old || old.tenant !== tenant) throw notFound("host key");
      return { ops: [del("h", id)], action: "hostkey.revoke", target: `${tenant}/${id}`, result: { revoked: old, id } };
    });
  }

  createProducer(actor: string, tenant: string, input: ProducerInput) {
    return this.#mutate(actor, (snap, now) => {
      if (!snap.records.tenants.has(tenant)) throw notFound("tenant");
      const field = `${tenant}/${input.id}`;
      if (snap.records.producers.has(field)) throw new RendezvousError("already_exists", "the producer exists");
      const kinds = new Set(input.credentials ?? ["key"]);
      const key = kinds.has("key") ? generate("pk") : undefined;
      const secret = kinds.has("secret") ? generate("ps") : undefined;
      const record: ProducerRecord = {
        eventTypes: input.eventTypes,
        ...(input.rateLimitPerSec !== undefined ? { rateLimitPerSec: input.rateLimitPerSec } : {}),
        ...(input.limits ? { limits: input.limits } : {}),
        keys: key ? [{ id: key.id, mac: this.#key.mac(key.value), createdAt: now }] : [],
        secrets: secret ? [{ id: secret.id, enc: this.#key.encrypt(secret.value), createdAt: now }] : [],
        createdAt: now,
        updatedAt: now,
      };
      return {
        ops: [put("p", field, record)],
        action: "producer.create",
        target: field,
        result: { key: key?.value, secret: secret?.value },
      };
    });
  }

  updateProducer(actor: string, tenant: string, producer: string, patch: ProducerPatch) {
    return this.#mutate(actor, (snap, now) => {
      const field = `${tenant}/${producer}`;
      const old = snap.records.producers.get(field);
      if (!old || !snap.records.tenants.has(tenant)) throw notFound("producer");
      const { fp: _fp, ...rest } = old;
      const record: ProducerRecord = { ...rest, updatedAt: now };
      if (patch.eventTypes) record.eventTypes = patch.eventTypes;
      if (patch.rateLimitPerSec === null) delete record.rateLimitPerSec;
      else if (patch.rateLimitPerSec !== undefined) record.rateLimitPerSec = patch.rateLimitPerSec;
      if (patch.limits === null) delete record.limits;
      else if (patch.limits) record.limits = patch.limits;
      if (patch.disabled === true) record.disabled = true;
      else if (patch.disabled === false) delete record.disabled;
      return { ops: [put("p", field, record)], action: "producer.update", target: field, result: {} };
    });
  }

  deleteProducer(actor: string, tenant: string, producer: string) {
    return this.#mutate(actor, (snap) => {
      const field = `${tenant}/${producer}`;
      if (!snap.records.producers.has(field)) throw notFound("producer");
      return { ops: [del("p", field)], action: "producer.delete", target: field, result: {} };
    });
  }

  /** A new bearer key or HMAC secret; with `overlapSeconds`, the others of its kind expire then. */
  createCredential(actor: string, tenant: string, producer: string, kind: "key" | "secret", overlapSeconds?: number) {
    return this.#mutate(actor, (snap, now) => {
      const field = `${tenant}/${producer}`;
      const old = snap.records.producers.get(field);
      if (!old || !snap.records.tenants.has(tenant)) throw notFound("producer");
      const made = generate(kind === "key" ? "pk" : "ps");
      const cred: CredentialRecord =
        kind === "key"
          ? { id: made.id, mac: this.#key.mac(made.value), createdAt: now }
          : { id: made.id, enc: this.#key.encrypt(made.value), createdAt: now };
      const expire = (list: CredentialRecord[]) =>
        overlapSeconds === undefined
          ? list
          : list.map((c) => ({
              ...c,
              expiresAt: Math.min(c.expiresAt ?? Number.POSITIVE_INFINITY, now + overlapSeconds * 1000),
            }));
      const { fp: _fp, ...rest } = old;
      const record: ProducerRecord = {
        ...rest,
        updatedAt: now,
        keys: kind === "key" ? [...expire(old.keys), cred] : old.keys,
        secrets: kind === "secret" ? [...expire(old.secrets), cred] : old.secrets,
      };
      return {
        ops: [put("p", field, record)],
        action: "credential.create",
        target: `${field}/${made.id}`,
        result: { credential: cred, value: made.value },
      };
    });
  }

  revokeCredential(actor: string, tenant: string, producer: string, id: string) {
    return this.#mutate(actor, (snap, now) => {
      const field = `${tenant}/${producer}`;
      const old = snap.records.producers.get(field);
      const cred = old && [...old.keys, ...old.secrets].find((c) => c.id === id);
      if (!old || !cred) throw notFound("credential");
      const { fp: _fp, ...rest } = old;
      const record: ProducerRecord = {
        ...rest,
        updatedAt: now,
        keys: old.keys.filter((c) => c.id !== id),
        secrets: old.secrets.filter((c) => c.id !== id),
      };
      return {
        ops: [put("p", field, record)],
        action: "credential.revoke",
        target: `${field}/${id}`,
        result: { revoked: cred },
      };
    });
  }

  putEventType(
    actor: string,
    type: string,
    def: { payloadSchema?: Record<string, unknown> | undefined; retentionMs?: number | undefined },
  ) {
    return this.#mutate(actor, (snap, now) => {
      const old = snap.records.eventTypes.get(type);
      const record: EventTypeRecord = nextEventTypeVersion(old, def.payloadSchema, def.retentionMs, now);
      const changed = old === undefined || record.version !== old.version;
      return {
        ops: changed ? [put("e", type, record)] : [],
        action: "eventtype.put",
        target: type,
        result: { created: old === undefined, record: changed ? record : old },
      };
    });
  }

  deleteEventType(actor: string, type: string) {
    return this.#mutate(actor, (snap) => {
      if (!snap.records.eventTypes.has(type)) throw notFound("event type");
      return { ops: [del("e", type)], action: "eventtype.delete", target: type, result: {} };
    });
  }
}
