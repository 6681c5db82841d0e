/**
 * The reads of partition keys that change nothing, for the roles, the HTTP surface
 * and the CLI: backlog per partition stream, the evidence `explain` needs, due and
 * upcoming deadlines, the console's counts and refusals, the stored partition count,
 * and the readiness probe's write. Built from a connection and the key layout (a
 * Store is one); the listing of waits reads wait records through the Store too, so it
 * takes the Store (list-waits.ts, console-reads.ts). Nothing outside the engine names
 * a partition key.
 */
import type { NearMiss } from "@rendezvous/protocol";
import type { Placement } from "../keys.js";
import { type PartitionBacklog, partitionBacklog } from "./backlog.js";
import {
  countWaits,
  overdueWaits,
  type RecentRejection,
  recentRejections,
  type TenantWaitCounts,
  waitTotals,
} from "./console-reads.js";
import {
  type DeadlineScan,
  dueAndNext,
  dueByPartition,
  dueWaits,
  type ScanOptions,
  scanDeadlines,
} from "./deadlines.js";
import { nearMisses } from "./evidence.js";
import { ensurePartitionCount, storedPartitionCount, storedPlacement, writeReadyProbe } from "./meta.js";
import type { ReaderSource } from "./source.js";

export class PartitionReader {
  readonly #src: ReaderSource;

  constructor(src: ReaderSource) {
    this.#src = { redis: src.redis, keys: src.keys };
  }

  /** Every partition index of the deployment, 0 … P-1. */
  allPartitions(): number[] {
    return this.#src.keys.allPartitions();
  }

  /** Unprocessed events of the given partitions' streams (all when omitted). */
  backlog(partitions: number[] = this.allPartitions()): Promise<PartitionBacklog[]> {
    return partitionBacklog(this.#src, partitions);
  }

  /** Buffered events of the tenant that nearly match (tenant, eventType, correlationId). */
  nearMisses(
    tenant: string,
    eventType: string | readonly string[],
    correlationId: string,
    perPartition?: number,
  ): Promise<NearMiss[]> {
    return nearMisses(this.#src, tenant, eventType, correlationId, perPartition);
  }

  /** Ids of a partition's waits due at `now`, at most `limit`. */
  dueWaits(partition: number, now: number, limit: number): Promise<string[]> {
    return dueWaits(this.#src, partition, now, limit);
  }

  /** Ids of each partition's waits due at `now`, at most `limit` per partition (one pipelined read). */
  dueByPartition(partitions: number[], now: number, limit: number): Promise<string[][]> {
    return dueByPartition(this.#src, partitions, now, limit);
  }

  /** {@link dueByPartition}, and the earliest deadline after `now` over them (null: none), in the same round trip. */
  dueAndNext(partitions: number[], now: number, limit: number): Promise<{ due: string[][]; next: number | null }> {
    return dueAndNext(this.#src, partitions, now, limit);
  }

  /** The sweeper's bounded read: overdue waits and one deadline per upcoming bucket. */
  upcoming(partitions: number[], opts: ScanOptions): Promise<DeadlineScan> {
    return scanDeadlines(this.#src, partitions, opts);
  }

  /** Waits of every partition past their deadline on the Redis clock, not settled yet. */
  overdueCount(): Promise<number> {
    return overdueWaits(this.#src);
  }

  /** Waiting and settled waits of each tenant, from the index sizes. */
  countWaits(tenants: string[]): Promise<TenantWaitCounts[]> {
    return countWaits(this.#src, tenants);
  }

  /** Waiting and settled (still retained) waits of the deployment: the index cardinalities. */
  async waitTotals(): Promise<{ waiting: number; settled: number }> {
    return waitTotals(this.#src);
  }

  /** The most recent refusals (newest first), of one tenant or of all (`null`). */
  recentRejections(
    tenant: string | null,
    opts: { limit?: number; perPartition?: number } = {},
  ): Promise<RecentRejection[]> {
    return recentRejections(this.#src, tenant, opts);
  }

  /** Stores the partition count on first start; refuses another one. @throws RendezvousError invalid_config */
  ensurePartitionCount(): Promise<void> {
    return ensurePartitionCount(this.#src);
  }

  /** The stored partition count, or null before the first start. */
  storedPartitionCount(): Promise<number | null> {
    return storedPartitionCount(this.#src);
  }

  /** The stored placement scheme, or null before the first start. */
  storedPlacement(): Promise<Placement | null> {
    return storedPlacement(this.#src);
  }

  /** Writes the readiness probe key (`value`, expiring after `ttlMs`): refused when Redis takes no writes. */
  writeReadyProbe(value: string, ttlMs: number): Promise<unknown> {
    return writeReadyProbe(this.#src, value, ttlMs);
  }
}
