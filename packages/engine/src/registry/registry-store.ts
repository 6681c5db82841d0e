/**
 * The registry's Redis side: its keys (one hash tag, `{<prefix>:reg}`, so one slot on a
 * cluster), the snapshot read, the one write (`registryCommit`, a compare-and-set on the
 * version), the audit read, the version poll and the last-use marks.
 */

import { decodeRecords, type RecordKind, type RegistryRecords, recordField } from "../formats/registry-records.js";
import type { RedisLike } from "../redis.js";
import { Code } from "../transitions/replies.js";
import { type ArgValue, clock, keyedCall, runScript } from "../transitions/run.js";

export interface RegistryKeys {
  /** the hash tag shared by every key below */
  readonly tag: string;
  /** hash: version, keycheck, devkey (only without RENDEZVOUS_SECRET_KEY) */
  readonly meta: string;
  /** hash "<kind>:<name>" → record JSON (formats/registry-records.ts) */
  readonly records: string;
  /** hash "<kind>:<name>" → fingerprint of the config file's form at the last seed */
  readonly seed: string;
  /** stream of audit entries */
  readonly audit: string;
  /** stream "<version>-1" → the record fields that version changed (registryChanges reads it) */
  readonly changelog: string;
  /** hash key id → last use (ms) */
  readonly lastUsed: string;
  /** pub/sub channel of the new versions */
  readonly channel: string;
}

export function registryKeys(prefix: string): RegistryKeys {
  const tag = `{${prefix}:reg}`;
  return {
    tag,
    meta: `${tag}:m`,
    records: `${tag}:r`,
    seed: `${tag}:s`,
    audit: `${tag}:a`,
    changelog: `${tag}:c`,
    lastUsed: `${tag}:u`,
    channel: `${prefix}:reg:changed`,
  };
}

/** The registry as read at one version. */
export interface RegistrySnapshot {
  version: number;
  records: RegistryRecords;
  /** fingerprints of the config file's entries at the last seed, by record field */
  seed: Map<string, string>;
  /** fields that did not decode (skipped) */
  bad: string[];
}

/** One write of a commit: a record (or seed fingerprint) set, or deleted (`value` null). */
export interface RegistryOp {
  target: "r" | "s";
  kind: RecordKind;
  name: string;
  value: unknown | null;
}

export interface AuditInput {
  actor: string;
  action: string;
  target: string;
}

export interface AuditEntry extends AuditInput {
  id: string;
  at: number;
  version: number;
}

export type CommitResult = { ok: true; version: number } | { ok: false; version: number };

export class RegistryStore {
  readonly keys: RegistryKeys;
  readonly #redis: RedisLike;

  constructor(redis: RedisLike, prefix: string) {
    this.#redis = redis;
    this.keys = registryKeys(prefix);
  }

  async version(): Promise<number> {
    return Number((await this.#redis.hget(this.keys.meta, "version")) ?? 0);
  }

  /** Every record, the seed fingerprints and the version they belong to, in one MULTI (one slot). */
  async load(): Promise<RegistrySnapshot> {
    const replies = await this.#redis
      .multi()
      .hget(this.keys.meta, "version")
      .hgetall(this.keys.records)
      .hgetall(this.keys.seed)
      .exec();
    if (!replies) throw new Error("registry read aborted");
    for (const [err] of replies) if (err) throw err;
    const [[, version], [, hash], [, seed]] = replies as [
      [null, string | null],
      [null, Record<string, string>],
      [null, Record<string, string>],
    ];
    const { records, bad } = decodeRecords(hash);
    return { version: Number(version ?? 0), records, seed: new Map(Object.entries(seed)), bad };
  }

  /**
   * Applies `ops` at once if the registry is still at `expected` (null: whatever its
   * version), with its audit entries; publishes the new version.
   */
  async commit(
    expected: number | null,
    ops: readonly RegistryOp[],
    audit: readonly AuditInput[],
  ): Promise<CommitResult> {
    const k = this.keys;
    const triples: ArgValue[] = [];
    for (const op of ops) {
      triples.push(op.target, recordField(op.kind, op.name), op.value === null ? "" : toText(op.value));
    }
    const call = keyedCall(
      "registryCommit",
      { meta: k.meta, records: k.records, seed: k.seed, audit: k.audit, changelog: k.changelog },
      {
        expected: expected === null ? "" : String(expected),
        channel: k.channel,
        audit: JSON.stringify(audit),
        now: clock(),
        ops: triples,
      },
    );
    const [code, version] = (await runScript(this.#redis, call)) as [number, number];
    return { ok: code === Code.OK, version: Number(version) };
  }

  /**
   * The record fields changed since `since` with their current values ("" deleted) and the
   * version they are at, or null when the changelog does not reach back (reload whole).
   */
  async changes(since: number, maxFields = 2000): Promise<{ version: number; fields: Array<[string, string]> } | null> {
    const k = this.keys;
    const call = keyedCall(
      "registryChanges",
      { meta: k.meta, records: k.records, changelog: k.changelog },
      { since: String(since), maxFields: String(maxFields) },
    );
    const reply = (await runScript(this.#redis, call)) as [number, number, ...string[]];
    const [version, complete, ...rest] = reply;
    if (complete !== 1) return null;
    const fields: Array<[string, string]> = [];
    for (let i = 0; i + 1 < rest.length; i += 2) fields.push([rest[i] as string, rest[i + 1] as string]);
    return { version: Number(version), fields };
  }

  /** The key check stored beside the registry, set by the first process (HSETNX). */
  async keyCheck(mine: string): Promise<string> {
    await this.#redis.hsetnx(this.keys.meta, "keycheck", mine);
    return (await this.#redis.hget(this.keys.meta, "keycheck")) ?? mine;
  }

  /** The key check stored beside the registry, or null before the first process set it. */
  async readKeyCheck(): Promise<string | null> {
    return this.#redis.hget(this.keys.meta, "keycheck");
  }

  /** The development key stored beside the registry, or null when there is none. */
  async readDevKey(): Promise<string | null> {
    return this.#redis.hget(this.keys.meta, "devkey");
  }

  /** The development key: `candidate` when there was none (HSETNX), else the one stored. */
  async devKey(candidate: string): Promise<string> {
    await this.#redis.hsetnx(this.keys.meta, "devkey", candidate);
    return (await this.#redis.hget(this.keys.meta, "devkey")) ?? candidate;
  }

  /** Audit entries, newest first, older than `before` (a stream id) when given. */
  async audit(limit: number, before?: string): Promise<{ entries: AuditEntry[]; nextBefore: string | null }> {
    const end = before === undefined ? "+" : `(${before}`;
    const rows = (await this.#redis.xrevrange(this.keys.audit, end, "-", "COUNT", limit)) as Array<[string, string[]]>;
    const entries = rows.map(([id, fields]) => {
      const f = new Map<string, string>();
      for (let i = 0; i + 1 < fields.length; i += 2) f.set(fields[i] as string, fields[i + 1] as string);
      return {
        id,
        at: Number(f.get("at")),
        actor: f.get("actor") ?? "",
        action: f.get("action") ?? "",
        target: f.get("target") ?? "",
        version: Number(f.get("version")),
      };
    });
    return { entries, nextBefore: rows.length === limit ? (rows.at(-1)?.[0] ?? null) : null };
  }

  async markUsed(keyId: string, at: number): Promise<void> {
    await this.#redis.hset(this.keys.lastUsed, keyId, String(at));
  }

  async lastUsed(): Promise<Map<string, number>> {
    const all = await this.#redis.hgetall(this.keys.lastUsed);
    return new Map(Object.entries(all).map(([id, at]) => [id, Number(at)]));
  }
}

function toText(value: unknown): string {
  return typeof value === "string" ? value : JSON.stringify(value);
}
