/**
 * bench:cluster-outage — what a role costs its machine while its whole Redis Cluster is
 * unreachable: `rendezvous <role>` against a local 3-master cluster, the cluster stopped,
 * then the role's CPU (share of one core, /proc) and RSS every few seconds, and its log
 * volume. A role should wait with capped backoff, its memory flat (docs/operations.md,
 * "Redis Cluster").
 * Usage: npm run bench:cluster-outage [-- --role start --seconds 60 --every 5]
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startRedisCluster } from "../packages/testkit/src/cluster.js";
import { parseArgs } from "./lib/args.js";
import { cpuSeconds, type RoleName, startRole } from "./lib/product.js";
import { sleep } from "./lib/stats.js";
import { fmt, printTable } from "./lib/table.js";

const args = parseArgs();
const role = args.string("role", "start") as RoleName;
const seconds = args.number("seconds", 60);
const every = args.number("every", 5);

function rssMb(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  return Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0) / 1024;
}

const cluster = await startRedisCluster({ masters: 3, replicas: 0 });
const dir = mkdtempSync(join(tmpdir(), "rdv-outage-"));
const configFile = join(dir, "config.json");
writeFileSync(configFile, JSON.stringify({ partitions: 8, tenants: { acme: { hostKeys: ["hk_acme_bench"] } } }));
const proc = startRole(role, { redisUrl: cluster.url, configFile, prefix: "outage" });
try {
  await proc.url;
  await sleep(2000);
  const rows: Array<Array<string | number>> = [];
  let cpu = cpuSeconds(proc.pid);
  let logBytes = proc.output().length;
  rows.push(["before", "", fmt(rssMb(proc.pid), 0), ""]);
  await cluster.stop();
  for (let t = every; t <= seconds; t += every) {
    await sleep(every * 1000);
    const now = cpuSeconds(proc.pid);
    const out = proc.output().length;
    rows.push([`+${t} s`, fmt(((now - cpu) / every) * 100, 1), fmt(rssMb(proc.pid), 0), out - logBytes]);
    cpu = now;
    logBytes = out;
  }
  printTable(
    `rendezvous ${role} with its Redis Cluster gone (3 masters stopped)`,
    ["time", "CPU, % of a core", "RSS MB", "log bytes"],
    rows,
  );
} finally {
  await proc.stop();
  await cluster.stop().catch(() => undefined);
  rmSync(dir, { recursive: true, force: true });
}
