/**
 * A consumer-group loop over the partition streams. On a single Redis one blocking
 * connection serves every partition with one XREADGROUP; on a Redis Cluster a
 * multi-stream read would span slots, so each partition stream gets its own reader
 * (one blocking connection and one XREADGROUP per partition). Stale entries of dead
 * consumers are claimed with XAUTOCLAIM after `claimIdleMs`; streams are trimmed
 * only below what the group has processed (both pipelined, per slot on a cluster).
 * The handler processes AND acknowledges a partition's entries.
 */
import { hostname } from "node:os";
import { execBatch, isCluster, type Logger, type RedisLike } from "@rendezvous/engine";
import type { ChainableCommander } from "ioredis";

export interface StreamEntry {
  id: string;
  /** field → value; null when the entry was trimmed while pending */
  fields: Record<string, string> | null;
}

export interface ConsumerLoopOptions {
  name: string;
  /** command connection (XACK, XAUTOCLAIM, XTRIM, XGROUP) */
  redis: RedisLike;
  /**
   * Opens a dedicated connection for blocking XREADGROUP: called once on a single
   * Redis, once per partition stream on a cluster (at start).
   */
  blocking: (purpose: string) => RedisLike;
  group: string;
  /** stream key of each partition */
  streams: Array<{ partition: number; key: string }>;
  /** processes entries of one partition, then acks them (see `ack`) */
  handle: (partition: number, key: string, entries: StreamEntry[]) => Promise<void>;
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

function toEntries(raw: unknown): StreamEntry[] {
  if (!Array.isArray(raw)) return [];
  return raw.map((item) => {
    const [id, flat] = item as [string, string[] | null];
    if (!flat) return { id, fields: null };
    const fields: Record<string, string> = {};
    for (let i = 0; i + 1 < flat.length; i += 2) fields[flat[i] as string] = flat[i + 1] as string;
    return { id, fields };
  });
}

/** "ms-seq" + 1 */
function nextId(id: string): string {
  const [ms, seq] = id.split("-");
  return `${ms}-${BigInt(seq ?? "0") + 1n}`;
}

export class ConsumerLoop {
  readonly consumer: string;
  readonly #o: Required<Omit<ConsumerLoopOptions, "consumer">>;
  #running = false;
  #loop: Promise<void> | undefined;
  #timers: NodeJS.Timeout[] = [];
  #inflight = new Set<Promise<void>>();
  #byKey: Map<string, number>;
  #readers: Array<{ conn: RedisLike; keys: string[] }> = [];

  constructor(opts: ConsumerLoopOptions) {
    this.consumer = opts.consumer ?? `${hostname()}-${process.pid}-${Math.random().toString(36).slice(2, 8)}`;
    this.#o = {
      ...opts,
      claimIdleMs: opts.claimIdleMs ?? 5000,
      blockMs: opts.blockMs ?? 1000,
      count: opts.count ?? 200,
      trimIntervalMs: opts.trimIntervalMs ?? 5000,
    };
    this.#byKey = new Map(opts.streams.map((s) => [s.key, s.partition]));
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
      this.#o.streams.map(({ key }) => ({
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
    const keys = this.#o.streams.map((s) => s.key);
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
      const batches = (reply as Array<[string, unknown]>).map(([key, raw]) => ({ key, entries: toEntries(raw) }));
      // partitions in parallel, each partition's entries in order
      await Promise.all(batches.map((b) => this.#process(b.key, b.entries)));
    }
  }

  async #process(key: string, entries: StreamEntry[]): Promise<void> {
    const partition = this.#byKey.get(key);
    if (partition === undefined || entries.length === 0) return;
    const work = this.#o.handle(partition, key, entries);
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

  /** Acknowledges processed entries of one stream. */
  async ack(key: string, ids: string[]): Promise<void> {
    if (ids.length > 0) await this.#o.redis.xack(key, this.#o.group, ...ids);
  }

  /** Claims entries idle longer than claimIdleMs (a dead consumer's) and processes them. */
  async claimStale(): Promise<number> {
    const results = await execBatch(
      this.#o.redis,
      this.#o.streams.map(({ key }) => ({
        key,
        add: (p: ChainableCommander) =>
          p.xautoclaim(key, this.#o.group, this.consumer, this.#o.claimIdleMs, "0-0", "COUNT", this.#o.count),
      })),
    );
    let claimed = 0;
    await Promise.all(
      results.map(async ([err, value], i) => {
        if (err) return; // stream or group missing: nothing to claim
        const key = this.#o.streams[i]?.key as string;
        const [, raw, deleted] = value as [string, unknown, string[] | undefined];
        const entries = toEntries(raw);
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
      this.#o.streams.flatMap(({ key }) => [
        { key, add: (p: ChainableCommander) => p.xinfo("GROUPS", key) },
        { key, add: (p: ChainableCommander) => p.xpending(key, this.#o.group) },
      ]),
    );
    const trims: Array<{ key: string; add: (p: ChainableCommander) => unknown }> = [];
    this.#o.streams.forEach(({ key }, i) => {
      const [infoErr, info] = results[2 * i] ?? [null, null];
      const [pendErr, pending] = results[2 * i + 1] ?? [null, null];
      if (infoErr || pendErr || !Array.isArray(info)) return;
      const group = (info as unknown[][]).find((g) => g[g.indexOf("name") + 1] === this.#o.group);
      if (!group) return;
      const lastDelivered = String(group[group.indexOf("last-delivered-id") + 1]);
      const [count, minPending] = pending as [number, string | null];
      const minId = count > 0 && minPending ? minPending : nextId(lastDelivered);
      if (minId === "0-1") return;
      trims.push({ key, add: (p) => p.xtrim(key, "MINID", "~", minId) });
    });
    await execBatch(this.#o.redis, trims);
  }
}
