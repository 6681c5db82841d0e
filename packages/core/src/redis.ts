/**
 * The one place that constructs Redis connections and sets their policy.
 */
import { Redis, type RedisOptions } from "ioredis";

export interface RedisConnectionOptions {
  /** connection name shown by CLIENT LIST */
  name?: string;
  /** extra ioredis options */
  options?: RedisOptions;
}

const DEFAULTS: RedisOptions = {
  // Reconnect with capped backoff; commands issued meanwhile wait (offline queue).
  retryStrategy: (times: number) => Math.min(50 * 2 ** Math.min(times, 6), 2000),
  maxRetriesPerRequest: 20,
  enableAutoPipelining: false,
};

/** A command connection (scripts, reads). */
export function createRedis(url: string, opts: RedisConnectionOptions = {}): Redis {
  return new Redis(url, { ...DEFAULTS, connectionName: opts.name, ...opts.options });
}

/** A connection for blocking commands (XREADGROUP BLOCK, BullMQ workers). */
export function createBlockingRedis(url: string, opts: RedisConnectionOptions = {}): Redis {
  return new Redis(url, { ...DEFAULTS, maxRetriesPerRequest: null, connectionName: opts.name, ...opts.options });
}
