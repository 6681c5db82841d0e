/**
 * The resources bag every system (ingest, match, deadline, dispatch) is built from.
 */
import type { Config } from "./config.js";
import { ListGate } from "./list-gate.js";
import { createLogger, type Logger } from "./logger.js";
import { createMetrics, type Metrics } from "./metrics.js";
import { createBlockingRedis, createRedis, isCluster, isClusterUrl, type RedisLike } from "./redis.js";
import { Directory } from "./registry/directory.js";
import { Store } from "./store.js";
import { createSubscriber, type Subscriber } from "./subscriber.js";
import { NO_TRACING, type Tracing } from "./tracing.js";

export interface Resources {
  readonly store: Store;
  readonly config: Config;
  /**
   * The tenants, credentials and event types this process serves: the config file's
   * until the server opens the registry (registry/sync.ts), then the registry's, kept
   * current; replacing it replaces `config.tenants` and `config.eventTypes`.
   */
  readonly directory: Directory;
  readonly logger: Logger;
  readonly metrics: Metrics;
  /** the process's tracing (NO_TRACING when off) */
  readonly tracing: Tracing;
  /** key prefix of every Redis key (`{<prefix>:p<N>}:…`) */
  readonly prefix: string;
  /**
   * BullMQ prefix of the queues: `<prefix>` on a single Redis, `{<prefix>}` on a
   * cluster (every key of a BullMQ queue must share one slot; see queuePrefixFor).
   */
  readonly queuePrefix: string;
  /** connected to a Redis Cluster (`redis+cluster://`) */
  readonly cluster: boolean;
  /**
   * Bound on each command of a command connection, ms (undefined: none). Blocking
   * connections never have one.
   */
  readonly commandTimeoutMs: number | undefined;
  /** the process-wide bound on wait records held by list requests (see list-gate.ts) */
  readonly listGate: ListGate;
  /** the shared command connection (bounded by commandTimeoutMs) */
  readonly redis: RedisLike;
  /**
   * Opens another connection to the same Redis, closed by `close()`: a command connection
   * bounded by commandTimeoutMs, or a blocking one (no bound, no retry limit).
   */
  connect(purpose: string, opts?: { blocking?: boolean }): RedisLike;
  /** Opens a subscribe-only connection (see subscriber.ts), closed by `close()`. */
  subscriber(purpose: string): Subscriber;
  /** closes every connection opened through this bag */
  close(): Promise<void>;
}

export interface ResourceOptions {
  redisUrl: string;
  config: Config;
  /** @defaultValue "rdv" */
  prefix?: string;
  logger?: Logger;
  metrics?: Metrics;
  /** @defaultValue NO_TRACING */
  tracing?: Tracing;
  /** test clock for the Store (see StoreOptions.clock) */
  clock?: () => number | undefined;
  /**
   * Bound on each command of the command connections, ms (RENDEZVOUS_REDIS_COMMAND_TIMEOUT_MS
   * for the CLI, DEFAULT_COMMAND_TIMEOUT_MS by default there) @defaultValue none
   */
  commandTimeoutMs?: number;
}

/**
 * The BullMQ prefix for a key prefix. BullMQ names a queue's keys
 * `<prefix>:<queue>:<suffix>` and its Lua scripts touch several of them at once, so
 * on a cluster they must share a slot: the prefix becomes the hash tag `{<prefix>}`
 * (every queue of the deployment in that slot). A single Redis keeps `<prefix>`.
 */
export function queuePrefixFor(prefix: string, cluster: boolean): string {
  return cluster ? `{${prefix}}` : prefix;
}

/**
 * QUIT when the connection is up (flushes what is queued), bounded; a connection
 * that is down or reconnecting is dropped at once: QUIT would wait behind its
 * offline queue through every reconnection attempt.
 */
async function closeConnection(c: RedisLike | Subscriber): Promise<void> {
  if (c.status === "end") return;
  if (c.status !== "ready") {
    c.disconnect();
    return;
  }
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([
    c.quit().catch(() => undefined),
    new Promise((resolve) => {
      timer = setTimeout(resolve, 2000);
    }),
  ]);
  clearTimeout(timer);
  // still open when QUIT did not finish in time
  if ((c.status as string) !== "end") c.disconnect();
}

export function createResources(opts: ResourceOptions): Resources {
  const prefix = opts.prefix ?? "rdv";
  const cluster = isClusterUrl(opts.redisUrl);
  const opened: Array<RedisLike | Subscriber> = [];
  const logger = opts.logger ?? createLogger();
  const connect = (purpose: string, o: { blocking?: boolean } = {}): RedisLike => {
    const name = `rendezvous:${purpose}`;
    const conn = o.blocking
      ? createBlockingRedis(opts.redisUrl, { name })
      : createRedis(opts.redisUrl, { name, commandTimeoutMs: opts.commandTimeoutMs });
    // ioredis reconnects by itself; say so once per failure instead of "unhandled error event"
    conn.on("error", (err: Error) => logger.warn({ err: err.message, connection: name }, "redis connection error"));
    opened.push(conn);
    return conn;
  };
  const redis = connect("commands");
  const subscriber = (purpose: string): Subscriber => {
    const name = `rendezvous:${purpose}`;
    const conn = createSubscriber(opts.redisUrl, {
      name,
      // on a cluster, the nodes the command connection knows now
      nodes: () =>
        isCluster(redis)
          ? redis.nodes("all").map((n) => ({ host: n.options.host ?? "127.0.0.1", port: n.options.port ?? 6379 }))
          : [],
    });
    conn.on("error", (err: Error) => logger.warn({ err: err.message, connection: name }, "redis connection error"));
    opened.push(conn);
    return conn;
  };
  const store = new Store({ redis, config: opts.config, prefix, clock: opts.clock });
  const directory = new Directory(opts.config);
  // a tenant's quotas follow its registry `limits` (docs/api.md, Quotas)
  store.quotas.follow((tenant) => directory.view.tenants.get(tenant)?.limits);
  return {
    store,
    listGate: new ListGate(opts.config.maxListBytesInFlight),
    config: opts.config,
    directory,
    logger,
    metrics: opts.metrics ?? createMetrics(),
    tracing: opts.tracing ?? NO_TRACING,
    prefix,
    queuePrefix: queuePrefixFor(prefix, cluster),
    cluster,
    commandTimeoutMs: opts.commandTimeoutMs,
    redis,
    connect,
    subscriber,
    async close() {
      await Promise.all(opened.splice(0).map(closeConnection));
    },
  };
}
