/**
 * A local Redis Cluster for tests and benchmarks: `masters` redis-server processes
 * (plus `replicas` per master) with cluster mode on, each on a free loopback port in
 * its own temp dir, joined with `redis-cli --cluster create`, ready once every node
 * reports `cluster_state:ok`. Stopped (or killed, for failover tests) by PID.
 */
import { spawn } from "node:child_process";
import { createRedis, freePort, type RedisLike, type RedisServer, startRedisServer } from "@rendezvous/engine";

export interface RedisClusterOptions {
  /** @defaultValue 3 */
  masters?: number;
  /** replicas per master (1 → 6 nodes for 3 masters) @defaultValue 0 */
  replicas?: number;
  /** AOF on every node @defaultValue false */
  aof?: boolean;
  /** appendfsync when aof is on @defaultValue "everysec" */
  fsync?: "always" | "everysec" | "no";
  /** cluster-node-timeout: how soon a dead master is failed over @defaultValue 1000 */
  nodeTimeoutMs?: number;
  /** extra `--name value` arguments for every node */
  args?: string[];
}

export interface ClusterNode {
  readonly port: number;
  readonly server: RedisServer;
}

export interface RedisCluster {
  /** `redis+cluster://127.0.0.1:p1,127.0.0.1:p2,…` (every node as a seed) */
  readonly url: string;
  readonly nodes: readonly ClusterNode[];
  /** the port of the master currently serving a key's slot (CLUSTER SHARDS / SLOTS view of a live node) */
  masterOf(key: string): Promise<number>;
  /** the ports of the current masters */
  masters(): Promise<number[]>;
  /**
   * waits until every live node reports cluster_state:ok, every live replica is in sync with
   * its master, and `expectMasters` live masters serve the slots
   */
  waitHealthy(ms?: number, expectMasters?: number): Promise<void>;
  /**
   * waits until every replica of the master on `port` has received everything that master
   * had replicated when called (`master_repl_offset`): the writes it acknowledged before are
   * then on a replica, whatever the master's fate next
   */
  replicated(port: number, ms?: number): Promise<void>;
  /** SIGKILL the node on `port` (keeps its dir) */
  kill(port: number): Promise<void>;
  /** stops every node and removes their dirs */
  stop(): Promise<void>;
}

function run(cmd: string, args: string[], ms = 60_000): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    child.stdout.on("data", (d) => {
      out += d.toString();
    });
    child.stderr.on("data", (d) => {
      out += d.toString();
    });
    const timer = setTimeout(() => child.kill("SIGKILL"), ms);
    child.once("error", (err) => {
      clearTimeout(timer);
      reject(err);
    });
    child.once("exit", (code) => {
      clearTimeout(timer);
      if (code === 0) resolve(out);
      else reject(new Error(`${cmd} ${args.join(" ")} exited ${code}:\n${out}`));
    });
  });
}

/** A one-off plain connection to one node (never a cluster client: it must talk to that node). */
async function withNode<T>(port: number, fn: (r: RedisLike) => Promise<T>): Promise<T> {
  const r = createRedis(`redis://127.0.0.1:${port}`, {
    name: "rendezvous:testkit-cluster",
    options: { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null, connectTimeout: 500 },
  });
  r.on("error", () => undefined);
  try {
    await r.connect();
    return await fn(r);
  } finally {
    r.disconnect();
  }
}

function info(text: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const line of text.split("\r\n")) {
    const i = line.indexOf(":");
    if (i > 0) out.set(line.slice(0, i), line.slice(i + 1));
  }
  return out;
}

/** INFO replication of one node, as fields. */
async function replicationOf(port: number): Promise<Map<string, string>> {
  return info(await withNode(port, (r) => r.info("replication")));
}

/** CLUSTER SLOTS of a live node: [from, to, master port] per range. */
async function slotMap(ports: number[]): Promise<Array<[number, number, number]>> {
  for (const port of ports) {
    try {
      const slots = await withNode(port, (r) => r.cluster("SLOTS"));
      return slots.map(([from, to, master]) => [from, to, Number(master?.[1])]);
    } catch {
      // dead node: ask the next
    }
  }
  throw new Error("no live cluster node");
}

const SLOT_TABLE = (() => {
  // CRC16/XMODEM, the Redis Cluster key hash
  const t = new Uint16Array(256);
  for (let i = 0; i < 256; i++) {
    let c = i << 8;
    for (let j = 0; j < 8; j++) c = c & 0x8000 ? (c << 1) ^ 0x1021 : c << 1;
    t[i] = c & 0xffff;
  }
  return t;
})();

/** The cluster slot of a key (hash tag aware). */
export function keySlot(key: string): number {
  const open = key.indexOf("{");
  let part = key;
  if (open >= 0) {
    const close = key.indexOf("}", open + 1);
    if (close > open + 1) part = key.slice(open + 1, close);
  }
  let crc = 0;
  for (const byte of Buffer.from(part))
    crc = ((crc << 8) ^ (SLOT_TABLE[((crc >> 8) ^ byte) & 0xff] as number)) & 0xffff;
  return crc % 16384;
}

/** Starts a local Redis Cluster and resolves once it is healthy. */
export async function startRedisCluster(opts: RedisClusterOptions = {}): Promise<RedisCluster> {
  const masters = opts.masters ?? 3;
  const replicas = opts.replicas ?? 0;
  const count = masters * (1 + replicas);
  const nodes: ClusterNode[] = [];
  const dead = new Set<number>();
  try {
    await Promise.all(
      Array.from({ length: count }, async () => {
        for (let attempt = 0; ; attempt++) {
          const port = await freePort();
          try {
            const server = await startRedisServer({
              port,
              aof: opts.aof ?? false,
              fsync: opts.fsync,
              args: [
                "--cluster-enabled",
                "yes",
                "--cluster-config-file",
                `nodes-${port}.conf`,
                "--cluster-node-timeout",
                String(opts.nodeTimeoutMs ?? 1000),
                "--cluster-require-full-coverage",
                "yes",
                ...(opts.args ?? []),
              ],
            });
            nodes.push({ port, server });
            return;
          } catch (err) {
            if (attempt >= 3) throw err; // a port taken between freePort and listen: try another
          }
        }
      }),
    );
    const ports = nodes.map((n) => n.port);
    await run("redis-cli", [
      "--cluster",
      "create",
      ...ports.map((p) => `127.0.0.1:${p}`),
      "--cluster-replicas",
      String(replicas),
      "--cluster-yes",
    ]);
  } catch (err) {
    await Promise.all(nodes.map((n) => n.server.stop()));
    throw err;
  }
  const live = () => nodes.filter((n) => !dead.has(n.port)).map((n) => n.port);
  const cluster: RedisCluster = {
    url: `redis+cluster://${nodes.map((n) => `127.0.0.1:${n.port}`).join(",")}`,
    nodes,
    async masterOf(key) {
      const slot = keySlot(key);
      const range = (await slotMap(live())).find(([from, to]) => slot >= from && slot <= to);
      if (!range) throw new Error(`slot ${slot} is not served`);
      return range[2];
    },
    async masters() {
      return [...new Set((await slotMap(live())).map(([, , port]) => port))];
    },
    async waitHealthy(ms = 30_000, expectMasters = masters) {
      const end = Date.now() + ms;
      let last = "";
      for (;;) {
        try {
          const states = await Promise.all(
            live().map((port) =>
              withNode(port, async (r) => {
                const state = info(String(await r.cluster("INFO")));
                const replication = info(await r.info("replication"));
                // a replica that has not synced yet could not be promoted if its master died
                return {
                  state,
                  synced: replication.get("role") !== "slave" || replication.get("master_link_status") === "up",
                };
              }),
            ),
          );
          const ok = states.every(
            ({ state, synced }) =>
              synced && state.get("cluster_state") === "ok" && state.get("cluster_slots_ok") === "16384",
          );
          const served = await this.masters();
          if (ok && served.length === expectMasters && served.every((p) => !dead.has(p))) return;
          last = JSON.stringify({
            states: states.map(
              ({ state, synced }) => `${state.get("cluster_state")}${synced ? "" : " (replica syncing)"}`,
            ),
            served,
          });
        } catch (err) {
          last = String(err);
        }
        if (Date.now() > end) throw new Error(`cluster not healthy after ${ms} ms: ${last}`);
        await new Promise((r) => setTimeout(r, 100));
      }
    },
    async replicated(port, ms = 10_000) {
      const end = Date.now() + ms;
      const master = await replicationOf(port);
      const target = Number(master.get("master_repl_offset"));
      // slave0:ip=127.0.0.1,port=…,state=online,offset=…,lag=… (each replica asked itself:
      // the offset the master lists is acknowledged only once a second)
      const replicas = [...master]
        .filter(([k]) => /^slave\d+$/.test(k))
        .map(([, v]) => Number(/port=(\d+)/.exec(v)?.[1]));
      if (replicas.length === 0) throw new Error(`${port} has no replica`);
      for (;;) {
        const offsets = await Promise.all(
          replicas.map(async (p) => Number((await replicationOf(p)).get("slave_repl_offset"))),
        );
        if (offsets.every((o) => o >= target)) return;
        if (Date.now() > end) throw new Error(`replicas of ${port} at ${offsets.join(", ")}, short of ${target}`);
        await new Promise((r) => setTimeout(r, 10));
      }
    },
    async kill(port) {
      const node = nodes.find((n) => n.port === port);
      if (!node) throw new Error(`no node on port ${port}`);
      dead.add(port);
      await node.server.kill();
    },
    async stop() {
      await Promise.all(nodes.map((n) => n.server.stop()));
    },
  };
  try {
    await cluster.waitHealthy();
  } catch (err) {
    await cluster.stop();
    throw err;
  }
  return cluster;
}
