import { encodeParts, fnv1a32 } from "./encoding.js";
import * as members from "./formats/index-members.js";

/** Every Redis key of one partition; all share the hash tag `{<prefix>:p<N>}`. */
export interface PartitionKeys {
  readonly partition: number;
  /** the hash tag shared by every key below */
  readonly tag: string;
  /** stream of accepted events (entry fields: formats/stream-entries.ts) */
  readonly stream: string;
  /** stream of resolutions waiting to be dispatched as continuations */
  readonly outbox: string;
  /** hash waitId → wait record */
  readonly waits: string;
  /** lex zset "<mk><waitId>" of waiting waits */
  readonly waiting: string;
  /** lex zset "<mk><waitId>" of settled waits, kept for late events */
  readonly done: string;
  /**
   * zset waitId scored by deadline: with the parked slots, the source of truth for
   * timeouts (the scheduler acts on this one; it promotes parked slots into it)
   */
  readonly deadlines: string;
  /**
   * zset of the parked deadline slots (member = score = slot start); each slot's waits
   * are the string "<parked>:<slot start>" of their 16-character wait id bodies
   * (lua/includes/parked-deadlines.lua): far deadlines, ~16 bytes per wait
   */
  readonly parked: string;
  /** lex zset "<mk><padded stream id><eventKey>" of buffered events */
  readonly inbox: string;
  /** hash event key → event record and dedup record (fields: formats/event-record.ts) */
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

/**
 * The string of one parked deadline slot, `<parked>:<slot start ms>`: its waits' id
 * bodies, one after the other (the scripts build the same name from the `parked` key).
 */
export function parkedSlotKey(k: PartitionKeys, slotStart: string | number): string {
  return `${k.parked}:${slotStart}`;
}

/** Consumer group of the matchers on each partition stream. */
export const MATCHER_GROUP = "matchers";
/** Consumer group of the dispatchers on each partition outbox. */
export const DISPATCHER_GROUP = "dispatchers";

export { digest4, tagPartition, untagPartition } from "./formats/index-members.js";

/**
 * How match keys are placed in partitions. `correlation`: by (tenant, correlationId),
 * so the match keys of one correlation id (an any-of wait's types) share a partition;
 * the scheme of deployments created since any-of waits. `match-key`: by (tenant,
 * eventType, correlationId), the scheme of deployments created before; the stored meta
 * says which (reads/meta.ts).
 */
export type Placement = "correlation" | "match-key";

/**
 * The one owner of every key name. Partition of a match key, a run key or an
 * event key is a stable hash (FNV-1a) of its encoded tuple, mod the partition count.
 */
/** The key of one tenant's quotas (KeyLayout.tenantQuota). */
export interface TenantQuotaKeys {
  /** the hash of its counts and limiters */
  readonly counts: string;
}

export class KeyLayout {
  readonly prefix: string;
  readonly partitions: number;
  #placement: Placement = "correlation";
  /**
   * May the wait indexes hold members of the legacy layout (written before 2026-12-01)?
   * True unless the deployment is known to have been created with the current one
   * (`ensurePartitionCount` reads it from the meta key): readers, the match and direct
   * delivery then look under the current index keys only.
   */
  legacyIndex = true;
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
        parked: `${tag}:dp`,
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

  /**
   * A tenant's quota key, in the tenant's own slot `{<prefix>:q:<tenant>}` (tenant names
   * are `[A-Za-z0-9._-]`, so the tag is the name): a hash of its counts (`w` waiting
   * waits, `b` buffered events) and its limiters' arrival times (`h` host requests, `p`
   * producer events, `p:<producer>` a producer's own rateLimitPerSec).
   */
  tenantQuota(tenant: string): TenantQuotaKeys {
    return { counts: `{${this.prefix}:q:${tenant}}:c` };
  }

  /** The partition of an encoded key (FNV-1a modulo the partition count). */
  place(encoded: string): number {
    return fnv1a32(encoded) % this.partitions;
  }

  /** Encoded match key (tenant, eventType, correlationId). */
  matchKey(tenant: string, eventType: string, correlationId: string): string {
    return encodeParts(tenant, eventType, correlationId);
  }

  /** The placement scheme in use (set from the stored meta at start: {@link usePlacement}). */
  get placement(): Placement {
    return this.#placement;
  }

  /** Uses the deployment's stored placement scheme (reads/meta.ts `ensureDeploymentMeta`). */
  usePlacement(placement: Placement): void {
    this.#placement = placement;
  }

  /** The partition of a match key: by (tenant, correlationId), or by the whole match key (see {@link Placement}). */
  matchPartition(tenant: string, eventType: string, correlationId: string): number {
    return this.#placement === "correlation"
      ? this.place(encodeParts(tenant, correlationId))
      : this.place(this.matchKey(tenant, eventType, correlationId));
  }

  /** Encoded event key (tenant, producer, eventId): the dedup key. */
  eventKey(tenant: string, producer: string, eventId: string): string {
    return encodeParts(tenant, producer, eventId);
  }

  eventPartition(tenant: string, producer: string, eventId: string): number {
    return this.place(this.eventKey(tenant, producer, eventId));
  }

  // The member layouts of the indexes are formats/index-members.ts'; these name them for the Store.

  /** The run digest of (tenant, runId): see {@link members.runDigest}. */
  runDigest(tenant: string, runId: string): string {
    return members.runDigest(tenant, runId);
  }

  /** A run position's key in the run index: see {@link members.runPosition}. */
  runPosition(tenant: string, runId: string, position: string): string {
    return members.runPosition(tenant, runId, position);
  }

  /** The run index of a run lives in the partition of (tenant, runId). */
  runPartition(tenant: string, runId: string): number {
    return this.place(encodeParts(tenant, runId));
  }

  /** The index key of a tenant, (tenant, type) or match key: see {@link members.indexKey}. */
  indexKey(tenant: string, eventType?: string, correlationId?: string): string {
    return members.indexKey(tenant, eventType, correlationId);
  }

  /** The legacy index key of an {@link indexKey} of `tenant`: see {@link members.legacyIndexKey}. */
  legacyIndexKey(tenant: string, ik: string): string {
    return members.legacyIndexKey(tenant, ik);
  }

  /** The wait id of a run position whose match key lies in `partition`. */
  waitId(tenant: string, runId: string, position: string, partition: number): string {
    return members.waitIdOf(partition, members.positionDigest(tenant, runId, position));
  }

  /** The wait id a run-index member (or a run position + partition tag) names. */
  waitIdOfRunMember(member: string): string {
    return members.waitIdOfRunMember(member);
  }

  /** The partition a wait id names, or null for an id that is malformed or out of range. */
  waitPartition(waitId: string): number | null {
    const p = members.parseWaitId(waitId)?.partition;
    return p !== undefined && p < this.partitions ? p : null;
  }
}
