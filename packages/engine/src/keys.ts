import { hash } from "node:crypto";
import { digest, encodeParts, fnv1a32 } from "./encoding.js";

/** Every Redis key of one partition; all share the hash tag `{<prefix>:p<N>}`. */
export interface PartitionKeys {
  readonly partition: number;
  /** the hash tag shared by every key below */
  readonly tag: string;
  /** stream of accepted events (entry field k = event key) */
  readonly stream: string;
  /** stream of resolutions waiting to be dispatched as continuations */
  readonly outbox: string;
  /** hash waitId → wait record */
  readonly waits: string;
  /** lex zset "<mk><waitId>" of waiting waits */
  readonly waiting: string;
  /** lex zset "<mk><waitId>" of settled waits, kept for late events */
  readonly done: string;
  /** zset waitId scored by deadline (source of truth for timeouts) */
  readonly deadlines: string;
  /** lex zset "<mk><padded stream id><eventKey>" of buffered events */
  readonly inbox: string;
  /** hash "e:<eventKey>" → event record, "d:<eventKey>" → dedup record */
  readonly events: string;
  /** zset of records to remove, scored by time */
  readonly expiry: string;
  /**
   * lex zset "<run digest 4><position digest 16><partition tag 3><defHash 5>" (run index):
   * 28 characters, so each member takes jemalloc's 32-byte class
   */
  readonly runs: string;
  /** capped list of refused events (for `explain`) */
  readonly rejected: string;
}

/** Consumer group of the matchers on each partition stream. */
export const MATCHER_GROUP = "matchers";
/** Consumer group of the dispatchers on each partition outbox. */
export const DISPATCHER_GROUP = "dispatchers";

const WAIT_ID = /^w(\d{1,5})\.([A-Za-z0-9_-]{16})$/;

const TAG = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/** 24 bits of SHA-1 as 4 base64url characters (the same as digest4 in lua/includes/common.lua). */
export function digest4(value: string): string {
  const n = Number.parseInt(hash("sha1", value, "hex").slice(0, 6), 16);
  return tagPartition(n >> 6) + (TAG[n & 63] as string);
}

/** A partition (< 2^18) as 3 base64url characters: the fixed-width tag in run-index members. */
export function tagPartition(p: number): string {
  return (TAG[(p >> 12) & 63] as string) + (TAG[(p >> 6) & 63] as string) + (TAG[p & 63] as string);
}

/** Inverse of {@link tagPartition}. */
export function untagPartition(tag: string): number {
  return (TAG.indexOf(tag[0] ?? "") << 12) | (TAG.indexOf(tag[1] ?? "") << 6) | TAG.indexOf(tag[2] ?? "");
}

/**
 * The one owner of every key name. Partition of a match key, a run key or an
 * event key is a stable hash (FNV-1a) of its encoded tuple, mod the partition count.
 */
export class KeyLayout {
  readonly prefix: string;
  readonly partitions: number;
  readonly #cache = new Map<number, PartitionKeys>();

  constructor(prefix: string, partitions: number) {
    if (!/^[A-Za-z0-9._-]{1,64}$/.test(prefix)) throw new Error(`invalid key prefix ${JSON.stringify(prefix)}`);
    if (!Number.isInteger(partitions) || partitions < 1 || partitions > 16384) {
      throw new Error(`invalid partition count ${partitions}`);
    }
    this.prefix = prefix;
    this.partitions = partitions;
  }

  /** Keys of partition `p`. */
  partition(p: number): PartitionKeys {
    let keys = this.#cache.get(p);
    if (!keys) {
      if (!Number.isInteger(p) || p < 0 || p >= this.partitions) throw new Error(`no partition ${p}`);
      const tag = `{${this.prefix}:p${p}}`;
      keys = Object.freeze({
        partition: p,
        tag,
        stream: `${tag}:s`,
        outbox: `${tag}:o`,
        waits: `${tag}:w`,
        waiting: `${tag}:iw`,
        done: `${tag}:id`,
        deadlines: `${tag}:dl`,
        inbox: `${tag}:ib`,
        events: `${tag}:e`,
        expiry: `${tag}:x`,
        runs: `${tag}:r`,
        rejected: `${tag}:rj`,
      });
      this.#cache.set(p, keys);
    }
    return keys;
  }

  /** Deployment-wide metadata (stored partition count). Its own slot. */
  get metaKey(): string {
    return `{${this.prefix}:meta}`;
  }

  /** The key /readyz writes to see that Redis takes writes (the meta key's slot). */
  get readyProbeKey(): string {
    return `${this.metaKey}:ready`;
  }

  /** Every partition index, 0 … P-1. */
  allPartitions(): number[] {
    return Array.from({ length: this.partitions }, (_, i) => i);
  }

  /** The partition of an encoded key (FNV-1a modulo the partition count). */
  place(encoded: string): number {
    return fnv1a32(encoded) % this.partitions;
  }

  /** Encoded match key (tenant, eventType, correlationId). */
  matchKey(tenant: string, eventType: string, correlationId: string): string {
    return encodeParts(tenant, eventType, correlationId);
  }

  matchPartition(tenant: string, eventType: string, correlationId: string): number {
    return this.place(this.matchKey(tenant, eventType, correlationId));
  }

  /** Encoded event key (tenant, producer, eventId): the dedup key. */
  eventKey(tenant: string, producer: string, eventId: string): string {
    return encodeParts(tenant, producer, eventId);
  }

  eventPartition(tenant: string, producer: string, eventId: string): number {
    return this.place(this.eventKey(tenant, producer, eventId));
  }

  /**
   * Digest of a run (tenant, runId): the prefix of its run-index members (4 chars). Short:
   * it only narrows a listing by run, which checks each wait's run id.
   */
  runDigest(tenant: string, runId: string): string {
    return digest(encodeParts(tenant, runId), 4);
  }

  /** Digest of a run position (tenant, runId, position): the body of its wait id (16 chars). */
  positionDigest(tenant: string, runId: string, position: string): string {
    return digest(encodeParts(tenant, runId, position), 16);
  }

  /**
   * A run position's key in the run index: run digest + position digest, 20 chars.
   * Fixed length, so a lexical range over it selects exactly one run position, and a
   * range over the run digest lists the positions of one run.
   */
  runPosition(tenant: string, runId: string, position: string): string {
    return this.runDigest(tenant, runId) + this.positionDigest(tenant, runId, position);
  }

  /** The run index of a run lives in the partition of (tenant, runId). */
  runPartition(tenant: string, runId: string): number {
    return this.place(encodeParts(tenant, runId));
  }

  /**
   * The index key of a tenant, (tenant, type) or match key in the wait indexes: 4, 8 or
   * 12 characters (4-character digests of each level; see indexKey in
   * lua/includes/common.lua, which computes the same from an encoded match key).
   */
  indexKey(tenant: string, eventType?: string, correlationId?: string): string {
    let ik = digest4(encodeParts(tenant));
    if (eventType === undefined) return ik;
    ik += digest4(encodeParts(tenant, eventType));
    if (correlationId === undefined) return ik;
    return ik + digest4(encodeParts(tenant, eventType, correlationId));
  }

  /** What the wait ids of a partition start with ("w<partition>."). */
  waitIdPrefix(partition: number): string {
    return `w${partition}.`;
  }

  /** The wait id a wait-index member of `partition` names. */
  waitIdOfIndexMember(partition: number, member: string): string {
    return this.waitIdPrefix(partition) + member.slice(12);
  }

  /** The wait id of a run position whose match key lies in `partition`. */
  waitId(tenant: string, runId: string, position: string, partition: number): string {
    return `w${partition}.${this.positionDigest(tenant, runId, position)}`;
  }

  /** The wait id a run-index member (or a run position + partition tag) names. */
  waitIdOfRunMember(member: string): string {
    return `w${untagPartition(member.slice(20, 23))}.${member.slice(4, 20)}`;
  }

  /** The partition a wait id names, or null for an id that is malformed or out of range. */
  waitPartition(waitId: string): number | null {
    const m = WAIT_ID.exec(waitId);
    if (!m) return null;
    const p = Number(m[1]);
    return p < this.partitions ? p : null;
  }
}
