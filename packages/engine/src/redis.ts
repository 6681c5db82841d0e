/**
 * The one place that constructs Redis connections and sets their policy: a single
 * Redis (`redis://`, `rediss://`) or a Redis Cluster (`redis+cluster://h1:p1,h2:p2`,
 * `rediss+cluster://…`; the hosts are seed nodes, the rest is discovered).
 */
import { Cluster, type ClusterOptions, Redis, type RedisOptions } from "ioredis";

/** A connection to a single Redis or to a Redis Cluster: the Store and the roles take either. */
export type RedisLike = Redis | Cluster;

export interface RedisConnectionOptions {
  /** connection name shown by CLIENT LIST */
  name?: string;
  /**
   * Longest a command waits for its answer, ms (ioredis `commandTimeout`): past it the
   * command is rejected with "Command timed out" (see isCommandTimeout), also while it
   * sits in the offline queue. A command already sent may still run when Redis answers
   * late. Command connections only: blocking connections never take it.
   */
  commandTimeoutMs?: number;
  /** extra ioredis options (for a cluster: applied to every node connection) */
  options?: RedisOptions;
  /** extra ioredis Cluster options (cluster URLs only) */
  clusterOptions?: ClusterOptions;
}

/** A parsed Redis URL: one server, or the seed nodes of a cluster. */
export type RedisTarget =
  | { kind: "single"; url: string }
  | {
      kind: "cluster";
      nodes: Array<{ host: string; port: number }>;
      username?: string;
      password?: string;
      tls: boolean;
    };

const CLUSTER_SCHEME = /^(rediss?)\+cluster:\/\/(.*)$/;

/** Is this a `redis+cluster://` (or `rediss+cluster://`) URL? */
export function isClusterUrl(url: string): boolean {
  return CLUSTER_SCHEME.test(url);
}

/**
 * Parses `redis+cluster://[user:password@]h1:p1,h2:p2,…[/]`; any other URL is a single Redis.
 * @throws Error for a cluster URL without a usable seed node
 */
export function parseRedisUrl(url: string): RedisTarget {
  const m = CLUSTER_SCHEME.exec(url);
  if (!m) return { kind: "single", url };
  const scheme = m[1] as string;
  let rest = (m[2] as string).replace(/[/?#].*$/, "");
  let username: string | undefined;
  let password: string | undefined;
  const at = rest.lastIndexOf("@");
  if (at >= 0) {
    const auth = rest.slice(0, at);
    rest = rest.slice(at + 1);
    const colon = auth.indexOf(":");
    username = decodeURIComponent(colon >= 0 ? auth.slice(0, colon) : "") || undefined;
    password = decodeURIComponent(colon >= 0 ? auth.slice(colon + 1) : auth) || undefined;
  }
  const nodes = rest
    .split(",")
    .filter(Boolean)
    .map((hp) => {
      const v6 = /^\[([^\]]+)\](?::(\d+))?$/.exec(hp);
      const [host, port] = v6 ? [v6[1] as string, v6[2]] : [hp.replace(/:\d*$/, ""), /:(\d+)$/.exec(hp)?.[1]];
      const n = Number(port ?? 6379);
      if (!host || !Number.isInteger(n) || n < 1 || n > 65535) {
        throw new Error(`invalid Redis Cluster URL: bad seed node ${JSON.stringify(hp)}`);
      }
      return { host, port: n };
    });
  if (nodes.length === 0) throw new Error("invalid Redis Cluster URL: no seed node (redis+cluster://host:port,…)");
  return { kind: "cluster", nodes, username, password, tls: scheme === "rediss" };
}

/** Is this connection a Redis Cluster client? */
export function isCluster(redis: RedisLike): redis is Cluster {
  return redis.isCluster === true;
}

const corked = new WeakSet<object>();

function uncork(stream: Redis["stream"]): void {
  corked.delete(stream);
  stream.uncork();
}

/**
 * Holds the socket writes of a single-Redis connection until the check phase of this
 * turn of the event loop (setImmediate): the commands that concurrent work issues in one
 * turn (requests read in one poll, continuations of one batch of replies) leave in one
 * write (writev) instead of one each. Order on the connection is kept and nothing waits
 * for a later turn of I/O. A cluster is left as it is (each command picks its node).
 */
export function coalesceWrites(redis: RedisLike): void {
  if (isCluster(redis) || redis.status !== "ready") return;
  const stream = redis.stream;
  if (corked.has(stream)) return;
  corked.add(stream);
  stream.cork();
  setImmediate(uncork, stream);
}

const DEFAULTS: RedisOptions = {
  // Reconnect with capped backoff; commands issued meanwhile wait (offline queue).
  retryStrategy: (times: number) => Math.min(50 * 2 ** Math.min(times, 6), 2000),
  maxRetriesPerRequest: 20,
  enableAutoPipelining: false,
};

/**
 * Cluster policy. A failover (a master dies, its replica is promoted after
 * `cluster-node-timeout`) shows up as closed connections, CLUSTERDOWN and MOVED
 * replies: each is retried after a short delay with a fresh slot map, and the retry
 * budget (`maxRedirections` × delay ≈ 30 s) outlasts a failover by far. Commands
 * issued while the client has no usable node wait in the offline queue.
 */
const CLUSTER_DEFAULTS: ClusterOptions = {
  clusterRetryStrategy: (times: number) => Math.min(100 * times, 2000),
  enableOfflineQueue: true,
  enableReadyCheck: true,
  scaleReads: "master",
  maxRedirections: 120,
  retryDelayOnFailover: 250,
  retryDelayOnClusterDown: 250,
  retryDelayOnTryAgain: 100,
  retryDelayOnMoved: 20,
  slotsRefreshTimeout: 2000,
  slotsRefreshInterval: 5000,
  enableAutoPipelining: false,
};

function connectTo(url: string, opts: RedisConnectionOptions, extra: RedisOptions): RedisLike {
  const target = parseRedisUrl(url);
  if (target.kind === "single") {
    return new Redis(url, { ...DEFAULTS, ...extra, connectionName: opts.name, ...opts.options });
  }
  const { retryStrategy: _nodeRetry, ...nodeDefaults } = DEFAULTS;
  return new Cluster(target.nodes, {
    ...CLUSTER_DEFAULTS,
    redisOptions: {
      ...nodeDefaults,
      ...extra,
      connectionName: opts.name,
      username: target.username,
      password: target.password,
      ...(target.tls ? { tls: {} } : {}),
      ...opts.options,
    },
    ...opts.clusterOptions,
  });
}

/**
 * Default bound on a command of a request path (RENDEZVOUS_REDIS_COMMAND_TIMEOUT_MS): a
 * frozen Redis turns into `503` after this, not a request hanging until it wakes.
 */
export const DEFAULT_COMMAND_TIMEOUT_MS = 2500;

/** The message ioredis rejects a command with when its `commandTimeout` fires. */
export const COMMAND_TIMED_OUT = "Command timed out";

/** Whether an error is a command timeout (ioredis `commandTimeout`, or withinCommandTimeout). */
export function isCommandTimeout(err: unknown): boolean {
  return err instanceof Error && err.message === COMMAND_TIMED_OUT;
}

/**
 * A command connection (scripts, reads): a `Redis`, or a `Cluster` for a `redis+cluster://` URL.
 * With `commandTimeoutMs`, every command is bounded by it.
 */
export function createRedis(url: string, opts: RedisConnectionOptions = {}): RedisLike {
  return connectTo(url, opts, opts.commandTimeoutMs ? { commandTimeout: opts.commandTimeoutMs } : {});
}

/**
 * Bounds an operation whose connection has no command timeout of its own (a BullMQ
 * Queue's `add` on a connection without one): rejects with the command-timeout error
 * after `ms`. The operation itself goes on and may still complete.
 */
export async function withinCommandTimeout<T>(ms: number | undefined, work: Promise<T>): Promise<T> {
  if (!ms) return work;
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new Error(COMMAND_TIMED_OUT)), ms);
  });
  try {
    return await Promise.race([work, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * A connection for blocking commands (XREADGROUP BLOCK, BullMQ workers and queues): no
 * retry limit per request and no command timeout (`commandTimeoutMs` is ignored): a
 * blocking read waits longer than any bound by design, and a BullMQ Queue whose first
 * command (its INFO version check) fails stays failed for good. A blocking command
 * holds its connection, so each concurrent blocking reader needs a connection of its own.
 */
export function createBlockingRedis(url: string, opts: RedisConnectionOptions = {}): RedisLike {
  const { commandTimeoutMs: _none, ...rest } = opts;
  return connectTo(url, rest, { maxRetriesPerRequest: null });
}
