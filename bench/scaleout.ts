import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { availableParallelism, cpus, tmpdir } from "node:os";
import { join } from "node:path";
import {
  type ConfigInput,
  createResources,
  execBatch,
  parseConfig,
  type RedisServer,
  type Resources,
  startRedisServer,
} from "@rendezvous/engine";
import { type RedisCluster, startRedisCluster } from "@rendezvous/testkit/cluster";
import type { ChainableCommander } from "ioredis";
import { pino } from "pino";
import { type RoleName, type RoleProcess, startRole as startProduct } from "./lib/product.js";

const argv = process.argv.slice(2);
const flag = (name: string) => argv.includes(`--${name}`);
const value = (name: string, fallback: number) => {
  const i = argv.indexOf(`--${name}`);
  return i >= 0 && argv[i + 1] ? Number(argv[i + 1]) : fallback;
};
const QUICK = flag("quick");
const REDIS_URL = (() => {
  const i = argv.indexOf("--redis-url");
  return i >= 0 ? argv[i + 1] : undefined;
})();
const EVENTS = value("events", QUICK ? 600 : 4000);
const PARTITIONS = value("partitions", 16);
const BATCH = 100;
const IN_FLIGHT = 4;
const KEY = "pk_bench";
const HOST_KEY = "hk_bench";

const CONFIG: ConfigInput = {
  partitions: PARTITIONS,
  tenants: { acme: { hostKeys: [HOST_KEY], producers: { svc: { keys: [KEY], eventTypes: ["bench.*"] } } } },
};

type Role = RoleProcess;

function startRole(name: RoleName, redisUrl: string, configFile: string, prefix: string): Role {
  return startProduct(name, { redisUrl, configFile, prefix });
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Waiting waits over every partition (one batched round trip). */
async function waitingCount(res: Resources): Promise<number> {
  const replies = await execBatch(
    res.redis,
    res.store.keys.allPartitions().map((p) => {
      const key = res.store.keys.partition(p).waiting;
      return { key, add: (pl: ChainableCommander) => pl.zcard(key) };
    }),
  );
  return replies.reduce((n, [, v]) => n + Number(v ?? 0), 0);
}

/** Outbox entries not yet dispatched (undelivered + pending) over every partition. */
async function outboxBacklog(res: Resources): Promise<number> {
  const replies = await execBatch(
    res.redis,
    res.store.keys.allPartitions().map((p) => {
      const key = res.store.keys.partition(p).outbox;
      return { key, add: (pl: ChainableCommander) => pl.xinfo("GROUPS", key) };
    }),
  );
  let n = 0;
  for (const [err, groups] of replies) {
    if (err || !Array.isArray(groups) || groups.length === 0) return Number.POSITIVE_INFINITY;
    const g = groups[0] as unknown[];
    n += Number(g[g.indexOf("lag") + 1] ?? 0) + Number(g[g.indexOf("pending") + 1] ?? 0);
  }
  return n;
}

async function post(url: string, events: unknown[]): Promise<void> {
  for (let attempt = 0; ; attempt++) {
    const r = await fetch(`${url}/v1/events/batch`, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        "rendezvous-producer": "acme/svc",
        authorization: `Bearer ${KEY}`,
      },
      body: JSON.stringify({ events }),
    });
    if (r.ok) {
      await r.arrayBuffer();
      return;
    }
    if (attempt > 5) throw new Error(`batch answered ${r.status}: ${await r.text()}`);
    await sleep(100);
  }
}

interface PhaseResult {
  target: string;
  matchers: number;
  events: number;
  ingestPerSec: number;
  resolvedPerSec: number;
  dispatchedPerSec: number;
  drainPerSec: number;
}

async function registerAll(res: Resources, label: string, n: number): Promise<string[]> {
  const ids = Array.from({ length: n }, (_, i) => `${label}-${i}`);
  for (let i = 0; i < n; i += 200) {
    await Promise.all(
      ids
        .slice(i, i + 200)
        .map((id) =>
          res.store.register("acme", { runId: id, position: "p", eventType: "bench.done", correlationId: id }),
        ),
    );
  }
  return ids;
}

async function postAll(apiUrl: string, ids: string[]): Promise<void> {
  const batches: unknown[][] = [];
  for (let i = 0; i < ids.length; i += BATCH) {
    batches.push(ids.slice(i, i + BATCH).map((id) => ({ id: `e-${id}`, type: "bench.done", correlationId: id })));
  }
  let next = 0;
  await Promise.all(
    Array.from({ length: IN_FLIGHT }, async () => {
      while (next < batches.length) await post(apiUrl, batches[next++] as unknown[]);
    }),
  );
}

async function until(check: () => Promise<boolean>): Promise<number> {
  while (!(await check())) await sleep(20);
  return performance.now();
}

type Measured = Omit<PhaseResult, "target" | "matchers">;

/** Live: post N events while every role runs; times ingest, resolution and dispatch. */
async function live(res: Resources, apiUrl: string, label: string, n: number): Promise<Omit<Measured, "drainPerSec">> {
  const ids = await registerAll(res, label, n);
  const before = await waitingCount(res);
  const t0 = performance.now();
  await postAll(apiUrl, ids);
  const posted = performance.now();
  const resolved = await until(async () => (await waitingCount(res)) <= before - n);
  const dispatched = await until(async () => (await outboxBacklog(res)) === 0);
  const rate = (t: number) => Math.round(n / ((t - t0) / 1000));
  return { events: n, ingestPerSec: rate(posted), resolvedPerSec: rate(resolved), dispatchedPerSec: rate(dispatched) };
}

/** Drain: matchers paused while N events are posted, then resumed together; times the matching alone. */
async function drain(res: Resources, apiUrl: string, matchers: Role[], label: string, n: number): Promise<number> {
  const ids = await registerAll(res, label, n);
  const before = await waitingCount(res);
  for (const m of matchers) m.child.kill("SIGSTOP");
  try {
    await postAll(apiUrl, ids);
  } finally {
    for (const m of matchers) m.child.kill("SIGCONT");
  }
  const t0 = performance.now();
  const resolved = await until(async () => (await waitingCount(res)) <= before - n);
  await until(async () => (await outboxBacklog(res)) === 0);
  return Math.round(n / ((resolved - t0) / 1000));
}

async function runTarget(target: string, redisUrl: string): Promise<PhaseResult[]> {
  const prefix = `so${Date.now().toString(36)}`;
  const dir = mkdtempSync(join(tmpdir(), "rdv-scaleout-"));
  const configFile = join(dir, "config.json");
  writeFileSync(configFile, JSON.stringify(CONFIG));
  const res = createResources({ redisUrl, prefix, config: parseConfig(CONFIG), logger: pino({ level: "silent" }) });
  const roles: Role[] = [];
  const results: PhaseResult[] = [];
  try {
    const t = performance.now();
    roles.push(startRole("api", redisUrl, configFile, prefix), startRole("dispatcher", redisUrl, configFile, prefix));
    roles.push(startRole("matcher", redisUrl, configFile, prefix));
    const [apiUrl] = (await Promise.all(roles.map((r) => r.url))) as [string];
    process.stderr.write(`${target}: roles up in ${Math.round(performance.now() - t)} ms; warm-up\n`);
    await live(res, apiUrl, "warm", Math.min(2000, EVENTS)); // JIT and connections warm before the first row
    for (const matchers of [1, 2]) {
      if (matchers === 2) {
        const second = startRole("matcher", redisUrl, configFile, prefix);
        roles.push(second);
        await second.url;
        await live(res, apiUrl, "warm2", Math.min(200, EVENTS)); // the new matcher joins the group
      }
      process.stderr.write(`${target}: ${matchers} matcher(s), ${EVENTS} events live, ${EVENTS} drained\n`);
      const measured = await live(res, apiUrl, `m${matchers}`, EVENTS);
      const drainPerSec = await drain(
        res,
        apiUrl,
        roles.filter((r) => r.name === "matcher"),
        `d${matchers}`,
        EVENTS,
      );
      results.push({ target, matchers, ...measured, drainPerSec });
    }
  } catch (err) {
    for (const r of roles) process.stderr.write(`--- ${r.name} (last lines)\n${r.output().slice(-3000)}\n`);
    throw err;
  } finally {
    await Promise.all(roles.map((r) => r.stop()));
    await res.close();
    rmSync(dir, { recursive: true, force: true });
  }
  return results;
}

function table(rows: PhaseResult[]): string {
  const head = ["target", "matchers", "events", "ingest/s", "resolved/s", "dispatched/s", "drain/s"];
  const body = rows.map((r) => [
    r.target,
    String(r.matchers),
    String(r.events),
    String(r.ingestPerSec),
    String(r.resolvedPerSec),
    String(r.dispatchedPerSec),
    String(r.drainPerSec),
  ]);
  const widths = head.map((h, i) => Math.max(h.length, ...body.map((b) => (b[i] as string).length)));
  const line = (cells: string[]) => `| ${cells.map((c, i) => c.padEnd(widths[i] as number)).join(" | ")} |`;
  return [line(head), line(widths.map((w) => "-".repeat(w))), ...body.map(line)].join("\n");
}

async function main(): Promise<void> {
  const started = performance.now();
  const rows: PhaseResult[] = [];
  let single: RedisServer | undefined;
  let cluster: RedisCluster | undefined;
  try {
    if (REDIS_URL) rows.push(...(await runTarget("redis", REDIS_URL)));
    else {
      single = await startRedisServer({ aof: true, fsync: "everysec" });
      rows.push(...(await runTarget("redis", single.url)));
      await single.stop();
      single = undefined;
      cluster = await startRedisCluster({ masters: 3, aof: true, fsync: "everysec" });
      rows.push(...(await runTarget("cluster-3m", cluster.url)));
    }
  } finally {
    await single?.stop();
    await cluster?.stop();
  }
  const cores = availableParallelism();
  console.log(
    `\nscale-out, end to end (POST /v1/events/batch → wait resolved → continuation queued), ${PARTITIONS} partitions`,
  );
  console.log(`machine: ${cores} cores (${cpus()[0]?.model ?? "?"}), node ${process.version}`);
  console.log("every process (Redis nodes, api, dispatcher, matchers, this load generator) shares those cores\n");
  console.log(table(rows));
  console.log(`\n(${Math.round((performance.now() - started) / 1000)} s)`);
  if (flag("json")) console.log(`SCALEOUT_JSON ${JSON.stringify(rows)}`);
}

await main();
