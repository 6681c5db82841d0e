/**
 * The resources bag every system (ingest, match, deadline, dispatch) is built from.
 */
import type { Redis } from "ioredis";
import type { Config } from "./config.js";
import { createLogger, type Logger } from "./logger.js";
import { createMetrics, type Metrics } from "./metrics.js";
import { createBlockingRedis, createRedis } from "./redis.js";
import { Store } from "./store.js";

export interface Resources {
  readonly store: Store;
  readonly config: Config;
  readonly logger: Logger;
  readonly metrics: Metrics;
  /** key prefix of every Redis key and of the BullMQ queues */
  readonly prefix: string;
  /** the shared command connection */
  readonly redis: Redis;
  /** opens another connection to the same Redis, closed by `close()` */
  connect(purpose: string, opts?: { blocking?: boolean }): Redis;
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
  /** test clock for the Store (see StoreOptions.clock) */
  clock?: () => number | undefined;
}

export function createResources(opts: ResourceOptions): Resources {
  const prefix = opts.prefix ?? "rdv";
  const opened: Redis[] = [];
  const connect = (purpose: string, o: { blocking?: boolean } = {}): Redis => {
    const name = `rendezvous:${purpose}`;
    const conn = o.blocking ? createBlockingRedis(opts.redisUrl, { name }) : createRedis(opts.redisUrl, { name });
    opened.push(conn);
    return conn;
  };
  const redis = connect("commands");
  return {
    store: new Store({ redis, config: opts.config, prefix, clock: opts.clock }),
    config: opts.config,
    logger: opts.logger ?? createLogger(),
    metrics: opts.metrics ?? createMetrics(),
    prefix,
    redis,
    connect,
    async close() {
      await Promise.all(
        opened.splice(0).map((c) => (c.status === "end" ? undefined : c.quit().catch(() => c.disconnect()))),
      );
    },
  };
}
