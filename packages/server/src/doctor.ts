/**
 * `rendezvous doctor`: checks the Redis a deployment runs on (each master of a
 * cluster); without a Redis URL, the embedded Redis of `rendezvous start` (its address
 * file in the data dir). Exit 1 on a problem.
 */
import { existsSync } from "node:fs";
import { join, resolve } from "node:path";
import { type Config, createRedis, isCluster, KeyLayout, PartitionReader, Store } from "@rendezvous/engine";
import type { Redis } from "ioredis";
import { REDIS_URL_FILE, readEmbeddedRedisUrl } from "./embedded-redis.js";
import { StartRefused } from "./refusal.js";

/** Which Redis doctor checks, and how to say so. */
export interface DoctorTarget {
  url: string;
  /** the first line of the text output */
  describe: string;
  /** the config of the `start` that runs this Redis, when doctor was given none */
  config?: string;
  /** the refusal to report when this Redis does not answer */
  unreachable?: () => StartRefused;
}

/**
 * `--redis-url`, else `REDIS_URL`, else the embedded Redis recorded in
 * `<data-dir>/redis.url` (with the dev config beside it); StartRefused when none runs.
 */
export function doctorTarget(
  flags: { redisUrl?: string; dataDir?: string },
  env: { REDIS_URL?: string },
): DoctorTarget {
  if (flags.redisUrl) return { url: flags.redisUrl, describe: "checking the Redis of --redis-url" };
  if (env.REDIS_URL) return { url: env.REDIS_URL, describe: "checking the Redis of REDIS_URL" };
  const dataDir = resolve(flags.dataDir ?? ".rendezvous");
  const file = join(dataDir, REDIS_URL_FILE);
  const url = readEmbeddedRedisUrl(dataDir);
  if (!url) {
    throw new StartRefused(
      `no embedded Redis is running: no ${file} (run \`rendezvous start\`, or check another Redis with --redis-url or REDIS_URL)`,
    );
  }
  const config = join(dataDir, "config.json");
  return {
    url,
    describe: `checking the embedded Redis at ${url} (from ${file})`,
    config: existsSync(config) ? config : undefined,
    unreachable: () =>
      new StartRefused(
        `the embedded Redis recorded in ${file} (${url}) does not answer: is \`rendezvous start\` still running on ${dataDir}?`,
      ),
  };
}

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

interface NodeFacts {
  node: string;
  version: string;
  aof: boolean;
  fsync: string;
  policy: string;
  /** CLUSTER INFO cluster_state, on a cluster */
  clusterState?: string;
}

async function nodeFacts(node: Redis, name: string, cluster: boolean): Promise<NodeFacts> {
  const server = parseInfo(await node.info("server"));
  const persistence = parseInfo(await node.info("persistence"));
  const memory = parseInfo(await node.info("memory"));
  const fsync = ((await node.config("GET", "appendfsync")) as string[])[1] ?? "?";
  const clusterState = cluster ? parseInfo(String(await node.cluster("INFO"))).get("cluster_state") : undefined;
  return {
    node: name,
    version: server.get("redis_version") ?? server.get("valkey_version") ?? "unknown",
    aof: persistence.get("aof_enabled") === "1",
    fsync,
    policy: memory.get("maxmemory_policy") ?? "?",
    clusterState,
  };
}

/** One value when every node agrees, else `node=value` per node. */
function summary(facts: NodeFacts[], pick: (f: NodeFacts) => string): string {
  const values = new Set(facts.map(pick));
  if (values.size === 1) return `${[...values][0]}${facts.length > 1 ? ` (all ${facts.length} masters)` : ""}`;
  return facts.map((f) => `${f.node}=${pick(f)}`).join(", ");
}

/**
 * Checks a single Redis, or every master of a Redis Cluster (`redis+cluster://`):
 * a cluster passes only if each master does, and its state is `ok`.
 */
export async function runDoctor(redisUrl: string, config: Config, prefix: string): Promise<Check[]> {
  const redis = createRedis(redisUrl, {
    name: "rendezvous:doctor",
    options: { maxRetriesPerRequest: 1 },
    clusterOptions: { clusterRetryStrategy: (times) => (times > 3 ? null : 200), maxRedirections: 16 },
  });
  redis.on("error", () => undefined); // the failing command reports it
  try {
    await redis.ping();
    const cluster = isCluster(redis);
    const nodes: Array<{ name: string; conn: Redis }> = cluster
      ? redis.nodes("master").map((n) => ({ name: `${n.options.host}:${n.options.port}`, conn: n }))
      : [{ name: redisUrl, conn: redis as Redis }];
    const facts = await Promise.all(nodes.map((n) => nodeFacts(n.conn, n.name, cluster)));
    const store = new Store({ redis, config, prefix });
    const reader = new PartitionReader(store);
    const stored = await reader.storedPartitionCount();
    const placement = await reader.storedPlacement();
    const layout = new KeyLayout(prefix, config.partitions);
    const versionOk = (v: string) => {
      const [major = 0] = v.split(".").map(Number);
      return major >= 7;
    };
    const checks: Check[] = [
      {
        name: "redis version",
        ok: facts.every((f) => versionOk(f.version)),
        value: summary(facts, (f) => f.version),
        advice: "Redis 7.0 or later (XAUTOCLAIM deleted-entry reply, consumer-group lag)",
      },
      {
        name: "aof",
        ok: facts.every((f) => f.aof),
        value: summary(facts, (f) => (f.aof ? "on" : "off")),
        advice: "appendonly yes: without AOF a restart of Redis loses waits and events",
      },
      {
        name: "appendfsync",
        ok: facts.every((f) => f.aof && (f.fsync === "always" || f.fsync === "everysec")),
        value: summary(facts, (f) => f.fsync),
        advice: "always (no loss) or everysec (up to 1 s lost on a crash of the host)",
      },
      {
        name: "maxmemory-policy",
        ok: facts.every((f) => f.policy === "noeviction"),
        value: summary(facts, (f) => f.policy),
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
      {
        // informational: which scheme places match keys (docs/architecture.md, Placement)
        name: "placement",
        ok: true,
        value:
          placement === null
            ? "not stored yet"
            : placement === "correlation"
              ? "correlation"
              : "match-key (created before any-of waits)",
      },
    ];
    if (cluster) {
      checks.push({
        name: "cluster state",
        ok: facts.every((f) => f.clusterState === "ok"),
        value: summary(facts, (f) => f.clusterState ?? "?"),
        advice: "every slot must be served (cluster_state:ok); check CLUSTER INFO and CLUSTER NODES",
      });
    }
    return checks;
  } finally {
    redis.disconnect();
  }
}
