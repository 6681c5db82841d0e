/**
 * `rendezvous doctor`: checks the Redis a deployment runs on. Exit 1 on a problem.
 */
import { type Config, createRedis, KeyLayout, Store, storedPartitionCount } from "@rendezvous/core";

export interface Check {
  name: string;
  ok: boolean;
  value: string;
  advice?: string;
}

function parseInfo(info: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const line of info.split("\r\n")) {
    const i = line.indexOf(":");
    if (i > 0) out.set(line.slice(0, i), line.slice(i + 1));
  }
  return out;
}

export async function runDoctor(redisUrl: string, config: Config, prefix: string): Promise<Check[]> {
  const redis = createRedis(redisUrl, { name: "rendezvous:doctor", options: { maxRetriesPerRequest: 1 } });
  try {
    const server = parseInfo(await redis.info("server"));
    const persistence = parseInfo(await redis.info("persistence"));
    const memory = parseInfo(await redis.info("memory"));
    const version = server.get("redis_version") ?? server.get("valkey_version") ?? "unknown";
    const [major = 0, minor = 0] = version.split(".").map(Number);
    const aof = persistence.get("aof_enabled") === "1";
    const fsync = ((await redis.config("GET", "appendfsync")) as string[])[1] ?? "?";
    const policy = memory.get("maxmemory_policy") ?? "?";
    const store = new Store({ redis, config, prefix });
    const stored = await storedPartitionCount(store);
    const layout = new KeyLayout(prefix, config.partitions);
    return [
      {
        name: "redis version",
        ok: major > 7 || (major === 7 && minor >= 0),
        value: version,
        advice: "Redis 7.0 or later (XAUTOCLAIM deleted-entry reply, consumer-group lag)",
      },
      {
        name: "aof",
        ok: aof,
        value: aof ? "on" : "off",
        advice: "appendonly yes: without AOF a restart of Redis loses waits and events",
      },
      {
        name: "appendfsync",
        ok: aof && (fsync === "always" || fsync === "everysec"),
        value: fsync,
        advice: "always (no loss) or everysec (up to 1 s lost on a crash of the host)",
      },
      {
        name: "maxmemory-policy",
        ok: policy === "noeviction",
        value: policy,
        advice: "noeviction: any eviction policy silently drops waits and events",
      },
      {
        name: "partitions",
        ok: stored === null || stored === layout.partitions,
        value:
          stored === null
            ? `not stored yet (configured ${layout.partitions})`
            : `stored ${stored}, configured ${layout.partitions}`,
        advice: "the configured partition count must equal the one stored on first start",
      },
    ];
  } finally {
    redis.disconnect();
  }
}
