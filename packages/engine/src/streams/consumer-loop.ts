/**
 * A consumer-group loop over one feed of the partitions: the event streams (group
 * `matchers`) or the outboxes (group `dispatchers`). The roles get their entries
 * decoded (formats/stream-entries.ts) and never name a partition key.
 *
 * On a single Redis one blocking connection serves every partition with one XREADGROUP; on a Redis Cluster a
 * multi-stream read would span slots, so each partition stream gets its own reader
 * (one blocking connection and one XREADGROUP per partition). Stale entries of dead
 * consumers are claimed with XAUTOCLAIM after `claimIdleMs`; streams are trimmed
 * only below what the group has processed (both pipelined, per slot on a cluster).
 * The handler processes AND acknowledges a partition's entries.
 */
import { hostname } from "node:os";
import type { ChainableCommander } from "ioredis";
import { type BatchCommand, execBatch } from "../batch.js";
import { findGroup } from "../formats/consumer-groups.js";
import {
  type EventEntry,
  eventsOfEntry,
  type ResolutionEntry,
  resolutionOfEntry,
  type StreamEntry,
  toStreamEntries,
} from "../formats/stream-entries.js";
import { DISPATCHER_GROUP, type KeyLayout, MATCHER_GROUP, type PartitionKeys } from "../keys.js";
import type { Logger } from "../logger.js";
import { isCluster, type RedisLike } from "../redis.js";

/** A stream of each partition, the consumer group that reads it, and how its entries decode. */
export interface Feed<E extends { id: string }> {
  readonly stream: (keys: PartitionKeys) => string;
  readonly group: string;
  readonly decode: (entry: StreamEntry) => E;
}

/** The partitions' event streams, read by the matchers. */
export const EVENT_FEED: Feed<EventEntry> = {
  stream: (k) => k.stream,
  group: MATCHER_GROUP,
  decode: eventsOfEntry,
};

/** The partitions' outboxes of resolutions, read by the dispatchers. */
export const RESOLUTION_FEED: Feed<ResolutionEntry> = {
  stream: (k) => k.outbox,
  group: DISPATCHER_GROUP,
  decode: resolutionOfEntry,
};

export interface ConsumerLoopOptions<E extends { id: string }> {
  name: string;
  /** command connection (XACK, XAUTOCLAIM, XTRIM, XGROUP) */
  redis: RedisLike;
  /**
   * Opens a dedicated connection for blocking XREADGROUP: called once on a single
   * Redis, once per partition stream on a cluster (at start).
   */
  blocking: (purpose: string) => RedisLike;
  /** the key layout of the partitions */
  keys: KeyLayout;
  feed: Feed<E>;
  /** the partitions served */
  partitions: number[];
  /** processes entries of one partition, then acks them (see `ack`) */
  handle: (partition: number, entries: E[]) => Promise<void>;
  logger: Logger;
  /** @defaultValue 5000 */
  claimIdleMs?: number;
  /** @defaultValue 1000 */
  blockMs?: number;
  /** @defaultValue 200 */
  count?: number;
  /** @defaultValue 5000 */
  trimIntervalMs?: number;
  /** consumer name @defaultValue host-pid-random */
  consumer?: string;
}

/** "ms-seq" + 1 */
function nextId(id: string): string {
  const [ms, seq] = id.split("-");
  return `${ms}-${BigInt(seq ?? "0") + 1n}`;
}

export class ConsumerLoop<E extends { id: string }> {
  readonly consumer: string;
  readonly #o: Required<Omit<ConsumerLoopOptions<E>, "consumer" | "keys" | "partitions">> & { group: string };
  /** stream key of each partition served */
  readonly #streams: Array<{ partition: number; key: string }>;
  #running = false;
  #loop: Promise<void> | undefined;
  #timers: NodeJS.Timeout[] = [];
  #inflight = new Set<Promise<void>>();
  #byKey: Map<string, number>;
  #byPartition: Map<number, string>;
  #readers: Array<{ conn: RedisLike; keys: string[] }> = [];

  constructor(opts: ConsumerLoopOptions<E>) {
    this.consumer = opts.consumer ?? `${hostname()}-${process.pid}-${Math.random().toString(36).slice(2, 8)}`;
    this.#o = {
      name: opts.name,
      redis: opts.redis,
      blocking: opts.blocking,
      feed: opts.feed,
      group: opts.feed.group,
      handle: opts.handle,
      logger: opts.logger,
      claimIdleMs: opts.claimIdleMs ?? 5000,
      blockMs: opts.blockMs ?? 1000,
      count: opts.count ?? 200,
      trimIntervalMs: opts.trimIntervalMs ?? 5000,
    };
    this.#streams = opts.partitions.map((p) => ({ partition: p, key: opts.feed.stream(opts.keys.partition(p)) }));
    this.#byKey = new Map(this.#streams.map((s) => [s.key, s.partition]));
    this.#byPartition = new Map(this.#streams.map((s) => [s.partition, s.key]));
  }

  get running(): boolean {
    return this.#running;
  }

  /** Blocking connections in use: 1 on a single Redis, one per partition stream on a cluster. */
  get readers(): number {
    return this.#readers.length;
  }

  /** Creates the consumer groups (from the start of each stream) if missing. */
  async ensureGroups(): Promise<void> {
    const results = await execBatch(
      this.#o.redis,
      this.#streams.map(({ key }) => ({
        key,
        add: (p: ChainableCommander) => p.xgroup("CREATE", key, this.#o.group, "0", "MKSTREAM"),
      })),
    );
    for (const [err] of results) {
      if (err && !String(err.message).includes("BUSYGROUP")) throw err;
    }
  }

  async start(): Promise<void> {
    await this.ensureGroups();
    const keys = this.#streams.map((s) => s.key);
    // a multi-key XREADGROUP must stay in one slot on a cluster: one reader per partition there
    const groups = isCluster(this.#o.redis) ? keys.map((k) => [k]) : [keys];
    this.#readers = groups.map((g, i) => ({
      conn: this.#o.blocking(groups.length === 1 ? `${this.#o.name}-read` : `${this.#o.name}-read-${i}`),
      keys: g,
    }));
    this.#running = true;
    this.#loop = Promise.all(this.#readers.map((r) => this.#readLoop(r.conn, r.keys))).then(() => undefined);
    const every = (ms: number, fn: () => Promise<unknown>) => {
      const t = setInterval(() => {
        if (this.#running) this.#track(fn().then(() => undefined));
      }, ms);
      t.unref();
      this.#timers.push(t);
    };
    every(Math.max(100, Math.floor(this.#o.claimIdleMs / 2)), () => this.claimStale());
    every(this.#o.trimIntervalMs, () => this.trim());
  }

  /** Stops reading, finishes in-flight work, returns when drained. */
  async stop(): Promise<void> {
    if (!this.#running) return;
    this.#running = false;
    for (const t of this.#timers) clearInterval(t);
    this.#timers = [];
    for (const r of this.#readers) r.conn.disconnect();
    await this.#loop;
    while (this.#inflight.size > 0) await Promise.allSettled([...this.#inflight]);
  }

  #track(p: Promise<void>): void {
    const tracked = p.catch((err) => this.#o.logger.error({ err }, `${this.#o.name}: background step failed`));
    this.#inflight.add(tracked);
    void tracked.finally(() => this.#inflight.delete(tracked));
  }

  async #readLoop(conn: RedisLike, keys: string[]): Promise<void> {
    const ids = keys.map(() => ">");
    while (this.#running) {
      let reply: unknown;
      try {
        reply = await conn.xreadgroup(
          "GROUP",
          this.#o.group,
          this.consumer,
          "COUNT",
          this.#o.count,
          "BLOCK",
          this.#o.blockMs,
          "STREAMS",
          ...keys,
          ...ids,
        );
      } catch (err) {
        if (!this.#running) return;
        this.#o.logger.warn({ err }, `${this.#o.name}: read failed, retrying`);
        // a group lost with its stream (a failover that dropped unreplicated writes, a flush): recreate it
        if (String((err as Error)?.message).includes("NOGROUP")) await this.ensureGroups().catch(() => undefined);
        await new Promise((r) => setTimeout(r, 200));
        continue;
      }
      if (!reply) continue;
      const batches = (reply as Array<[string, unknown]>).map(([key, raw]) => ({ key, entries: toStreamEntries(raw) }));
      // partitions in parallel, each partition's entries in order
      await Promise.all(batches.map((b) => this.#process(b.key, b.entries)));
    }
  }

  async #process(key: string, entries: StreamEntry[]): Promise<void> {
    const partition = this.#byKey.get(key);
    if (partition === undefined || entries.length === 0) return;
    // decoded inside the work: an entry that does not decode fails the handling like any other error
    const work = (async () => this.#o.handle(partition, entries.map(this.#o.feed.decode)))();
    this.#inflight.add(work);
    try {
      await work;
    } catch (err) {
      // left pending: claimed again after claimIdleMs
      this.#o.logger.error({ err, partition }, `${this.#o.name}: handling failed; entries stay pending`);
    } finally {
      this.#inflight.delete(work);
    }
  }

  /**
   * Handles entries of a partition delivered to this consumer by other means than its
   * read (a match script's handoff, see `Handoff`), as if read: the handler processes
   * and acks them, `stop` waits for it, and a failure leaves them pending for a claim.
   */
  handOver(partition: number, entries: StreamEntry[]): Promise<void> {
    return this.#process(this.#streamOf(partition), entries);
  }

  /** Acknowledges processed entries of one partition's stream. */
  async ack(partition: number, ids: string[]): Promise<void> {
    const key = this.#streamOf(partition);
    if (ids.length > 0) await this.#o.redis.xack(key, this.#o.group, ...ids);
  }

  /**
   * The acknowledgement of processed entries of one partition's stream as a command of a
   * batch (execBatch, EngineContext.runAll): it goes in the pipeline of the partition's
   * slot, behind the scripts of that partition it follows.
   */
  ackCommand(partition: number, ids: string[]): BatchCommand {
    const { key, group } = this.ackOf(partition, ids);
    return { key, add: (p) => (ids.length > 0 ? p.xack(key, group, ...ids) : p.echo("")) };
  }

  /** The acknowledgement of processed entries of one partition's stream, as XACK's key, group and ids. */
  ackOf(partition: number, ids: readonly string[]): { key: string; group: string; ids: readonly string[] } {
    return { key: this.#streamOf(partition), group: this.#o.group, ids };
  }

  #streamOf(partition: number): string {
    const key = this.#byPartition.get(partition);
    if (key === undefined) throw new Error(`${this.#o.name}: partition ${partition} is not served`);
    return key;
  }

  /** Claims entries idle longer than claimIdleMs (a dead consumer's) and processes them. */
  async claimStale(): Promise<number> {
    const results = await execBatch(
      this.#o.redis,
      this.#streams.map(({ key }) => ({
        key,
        add: (p: ChainableCommander) =>
          p.xautoclaim(key, this.#o.group, this.consumer, this.#o.claimIdleMs, "0-0", "COUNT", this.#o.count),
      })),
    );
    let claimed = 0;
    await Promise.all(
      results.map(async ([err, value], i) => {
        if (err) return; // stream or group missing: nothing to claim
        const key = this.#streams[i]?.key as string;
        const [, raw, deleted] = value as [string, unknown, string[] | undefined];
        const entries = toStreamEntries(raw);
        // entries trimmed while pending are dropped from the PEL by XAUTOCLAIM itself (Redis 7)
        if (deleted && deleted.length > 0) this.#o.logger.warn({ key, deleted }, "claimed entries were trimmed");
        claimed += entries.length;
        if (entries.length > 0) {
          this.#o.logger.info({ key, count: entries.length }, `${this.#o.name}: claimed stale entries`);
          await this.#process(key, entries);
        }
      }),
    );
    return claimed;
  }

  /** Trims each stream below the oldest entry the group has not acknowledged. */
  async trim(): Promise<void> {
    const results = await execBatch(
      this.#o.redis,
      this.#streams.flatMap(({ key }) => [
        { key, add: (p: ChainableCommander) => p.xinfo("GROUPS", key) },
        { key, add: (p: ChainableCommander) => p.xpending(key, this.#o.group) },
      ]),
    );
    const trims: Array<{ key: string; add: (p: ChainableCommander) => unknown }> = [];
    this.#streams.forEach(({ key }, i) => {
      const [infoErr, info] = results[2 * i] ?? [null, null];
      const [pendErr, pending] = results[2 * i + 1] ?? [null, null];
      if (infoErr || pendErr || !Array.isArray(info)) return;
      const group = findGroup(info, this.#o.group);
      if (!group) return;
      const lastDelivered = group.lastDeliveredId;
      const [count, minPending] = pending as [number, string | null];
      const minId = count > 0 && minPending ? minPending : nextId(lastDelivered);
      if (minId === "0-1") return;
      trims.push({ key, add: (p) => p.xtrim(key, "MINID", "~", minId) });
    });
    await execBatch(this.#o.redis, trims);
  }
}
