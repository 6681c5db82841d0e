import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type ConfigInput, createResources, execBatch, parseConfig, type Resources } from "@rendezvous/engine";
import type { ChainableCommander, Redis } from "ioredis";
import { pino } from "pino";
import { parseArgs } from "./lib/args.js";
import { runPool } from "./lib/pool.js";
import { type RoleProcess, startRole } from "./lib/product.js";
import { openWindow, quiesce, type RedisServer, startBenchRedis, type Window } from "./lib/redis.js";
import { load, machine, saveResults } from "./lib/setup.js";
import { type Summary, sleep, summarize } from "./lib/stats.js";
import { fmt, printTable, progress } from "./lib/table.js";

const args = parseArgs();
const QUICK = args.flag("quick");
const WAITS = args.number("waits", QUICK ? 5000 : 50_000);
const RATE = args.number("rate", 100);
const PARTITIONS = args.number("partitions", 16);
const UNLOADED_SECONDS = args.number("unloaded-seconds", QUICK ? 3 : 6);
const REDIS_URL = args.string("redis-url", "");
/** a directory: the server writes a V8 CPU profile there when it exits (node --cpu-prof) */
const CPU_PROF = args.string("cpu-prof", "");
/** the server's sweeper makes bucket jobs this far ahead (Scheduler's default lookahead) */
const LOOKAHEAD_MS = 5000;
const HOST_A = "hk_burst_a";
const HOST_B = "hk_burst_b";

const CONFIG: ConfigInput = {
  partitions: PARTITIONS,
  tenants: { a: { hostKeys: [HOST_A] }, b: { hostKeys: [HOST_B] } },
};

type Server = RoleProcess;

function startServer(redisUrl: string, configFile: string, prefix: string): Server {
  const nodeArgs = CPU_PROF ? ["--cpu-prof", `--cpu-prof-dir=${CPU_PROF}`] : [];
  return startRole("start", { redisUrl, configFile, prefix, nodeArgs });
}

interface Sample {
  /** Date.now() when sent */
  at: number;
  ms: number;
  ok: boolean;
}

/** B's registrations so far (each names a run of its own). */
let registered = 0;

/** POST /v1/waits for tenant B at `rate` per second until `stop()`; each answer timed. */
function tenantB(base: string, rate: number): { samples: Sample[]; stop(): Promise<void> } {
  const samples: Sample[] = [];
  const inFlight = new Set<Promise<void>>();
  let n = 0;
  const one = async () => {
    const i = registered++;
    n++;
    const at = Date.now();
    const t0 = performance.now();
    let ok = false;
    try {
      const r = await fetch(`${base}/v1/waits`, {
        method: "POST",
        headers: { "content-type": "application/json", authorization: `Bearer ${HOST_B}` },
        body: JSON.stringify({
          runId: `b-${process.pid}-${i}`,
          position: "step",
          eventType: "b.done",
          correlationId: `b-${i}`,
          timeoutMs: 3_600_000,
        }),
      });
      await r.arrayBuffer();
      ok = r.status === 201;
    } catch {
      ok = false;
    }
    samples.push({ at, ms: performance.now() - t0, ok });
  };
  const started = performance.now();
  let running = true;
  const loop = (async () => {
    while (running) {
      const due = started + (n * 1000) / rate;
      const wait = due - performance.now();
      if (wait > 0) await sleep(wait);
      const p = one().finally(() => inFlight.delete(p));
      inFlight.add(p);
    }
  })();
  return {
    samples,
    async stop() {
      running = false;
      await loop;
      await Promise.all(inFlight);
    },
  };
}

/** Waits of A still due-or-pending: members of the deadline indexes scored at or before the deadline. */
async function stillPending(res: Resources, deadline: number): Promise<number> {
  const replies = await execBatch(
    res.redis,
    res.store.keys.allPartitions().map((p) => {
      const key = res.store.keys.partition(p).deadlines;
      return { key, add: (pl: ChainableCommander) => pl.zcount(key, "-inf", deadline) };
    }),
  );
  return replies.reduce((sum, [, v]) => sum + Number(v ?? 0), 0);
}

/** CPU seconds (user + system) a process has used so far, from /proc (Linux); NaN elsewhere. */
function cpuSeconds(pid: number | undefined): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return Number.NaN;
  }
}

/** `name_sum` and `name_count` of a Prometheus histogram in a /metrics text, summed over its label sets. */
function histogram(text: string, name: string): { sum: number; count: number } {
  const value = (suffix: string) =>
    [...text.matchAll(new RegExp(`^${name}_${suffix}(?:\\{[^}]*\\})? (\\S+)$`, "gm"))].reduce(
      (n, m) => n + Number(m[1]),
      0,
    );
  return { sum: value("sum"), count: value("count") };
}

export interface BurstResult {
  waits: number;
  timedOut: number;
  rate: number;
  fireAllMs: number;
  allDueGoneMs: number;
  lateness: Summary;
  unloaded: Summary;
  lookahead: Summary;
  firing: Summary;
  failed: { unloaded: number; lookahead: number; firing: number };
  ratioP95: number;
  metric: { sum: number; count: number };
  sweeperOverdueLogs: number;
  /** the rendezvous process's CPU (1 = one core) from the deadline until none was due */
  serverCpu: number;
  /** redis-server CPU (1 = one core) and its busiest commands from the deadline until none was due */
  redis: { cpu: number; top: string[] } | undefined;
  loadStart: string;
  loadEnd: string;
}

export async function burst(redisUrl: string): Promise<BurstResult> {
  const prefix = `tb${Date.now().toString(36)}`;
  const dir = mkdtempSync(join(tmpdir(), "rdv-burst-"));
  const configFile = join(dir, "config.json");
  writeFileSync(configFile, JSON.stringify(CONFIG));
  const res = createResources({ redisUrl, prefix, config: parseConfig(CONFIG), logger: pino({ level: "silent" }) });
  const server = startServer(redisUrl, configFile, prefix);
  try {
    const base = await server.url;
    const loadStart = load();
    progress(`server up on ${base}; load average ${loadStart}; warm-up`);
    const warm = tenantB(base, 200);
    await sleep(1500);
    await warm.stop();
    // A's deadline: after A's registration, B's unloaded window and the lookahead
    const registerSeconds = WAITS / 2500 + 6;
    const deadline = Date.now() + (registerSeconds + UNLOADED_SECONDS + LOOKAHEAD_MS / 1000 + 1) * 1000;
    progress(`registering ${fmt(WAITS)} waits of tenant A, deadline ${new Date(deadline).toISOString()}`);
    const ids: string[] = new Array(WAITS);
    const iso = new Date(deadline).toISOString();
    await runPool(WAITS, 200, async (i) => {
      const { wait } = await res.store.register("a", {
        runId: `a-${i}`,
        position: "step",
        eventType: "a.done",
        correlationId: `a-${i}`,
        deadline: iso,
      });
      ids[i] = wait.id;
    });
    // an AOF rewrite after so many writes would skew the unloaded window
    await quiesce(res.redis as Redis);
    const unloadedFrom = Date.now();
    const unloadedTo = deadline - LOOKAHEAD_MS - 500;
    if (unloadedTo - unloadedFrom < 1000)
      throw new Error("registration took too long: no time left for the unloaded window (try fewer --waits)");
    progress(`tenant B at ${RATE}/s; unloaded until ${new Date(unloadedTo).toISOString()}`);
    const b = tenantB(base, RATE);
    let lastDue = Number.NaN;
    let redisWindow: Window | undefined;
    let serverCpu = Number.NaN;
    try {
      await sleep(deadline - Date.now());
      const closeWindow = await openWindow(res.redis as Redis);
      const cpu0 = cpuSeconds(server.child.pid);
      const t0 = performance.now();
      progress("deadline reached: waiting for every wait of A to time out");
      const limit = Date.now() + 180_000;
      for (;;) {
        const left = await stillPending(res, deadline);
        if (left === 0) {
          lastDue = Date.now();
          redisWindow = await closeWindow();
          serverCpu = (cpuSeconds(server.child.pid) - cpu0) / ((performance.now() - t0) / 1000);
          break;
        }
        if (Date.now() > limit) throw new Error(`${left} waits of A still pending 180 s after their deadline`);
        await sleep(20);
      }
      await sleep(500);
    } finally {
      await b.stop();
    }
    const loadEnd = load();
    progress(`all fired ${lastDue - deadline} ms after the deadline; reading ${fmt(WAITS)} waits back`);
    const at: number[] = [];
    let timedOut = 0;
    await runPool(WAITS, 100, async (i) => {
      const w = await res.store.getWait("a", ids[i] as string);
      if (w?.state === "timed_out" && w.resolution) {
        timedOut++;
        at.push(Date.parse(w.resolution.at));
      }
    });
    const metrics = await (await fetch(`${base}/metrics`)).text();
    const window = (from: number, to: number) => b.samples.filter((s) => s.at >= from && s.at < to);
    const ok = (list: Sample[]) => summarize(list.filter((s) => s.ok).map((s) => s.ms));
    const failed = (list: Sample[]) => list.filter((s) => !s.ok).length;
    const unloaded = window(unloadedFrom, unloadedTo);
    const lookahead = window(deadline - LOOKAHEAD_MS, deadline);
    const firing = window(deadline, lastDue);
    const u = ok(unloaded);
    const f = ok(firing);
    return {
      waits: WAITS,
      timedOut,
      rate: RATE,
      fireAllMs: Math.max(...at) - Math.min(...at),
      allDueGoneMs: lastDue - deadline,
      lateness: summarize(at.map((t) => t - deadline)),
      unloaded: u,
      lookahead: ok(lookahead),
      firing: f,
      failed: { unloaded: failed(unloaded), lookahead: failed(lookahead), firing: failed(firing) },
      ratioP95: f.p95 / u.p95,
      metric: histogram(metrics, "rendezvous_timeout_lateness_seconds"),
      redis: redisWindow
        ? {
            cpu: redisWindow.redisCpu,
            top: redisWindow.commands.slice(0, 6).map((c) => `${c.command} ${c.calls}× ${c.usecPerCall.toFixed(1)} µs`),
          }
        : undefined,
      serverCpu,
      sweeperOverdueLogs: server.output().split("overdue waits without a timeout job").length - 1,
      loadStart,
      loadEnd,
    };
  } catch (err) {
    process.stderr.write(`--- server (last lines)\n${server.output().slice(-3000)}\n`);
    throw err;
  } finally {
    await server.stop();
    await res.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

function latencyRow(name: string, s: Summary, failures: number): string[] {
  return [
    name,
    fmt(s.count),
    `${fmt(s.p50)} / ${fmt(s.p95)} / ${fmt(s.p99)} / ${fmt(s.max)}`,
    failures > 0 ? `${failures} failed` : "",
  ];
}

async function main(): Promise<void> {
  const redis: RedisServer | undefined = REDIS_URL ? undefined : await startBenchRedis(15 * 60_000);
  try {
    const url = REDIS_URL || (redis as RedisServer).url;
    const r = await burst(url);
    console.log(`\ntimeouts burst — ${new Date().toISOString()}; ${machine()}`);
    console.log(`load average (1/5/15 min): ${r.loadStart} at start, ${r.loadEnd} after the burst`);
    printTable(
      `tenant A: ${fmt(r.waits)} waits sharing one deadline (rendezvous start, ${PARTITIONS} partitions)`,
      ["metric", "value"],
      [
        ["timed out", `${fmt(r.timedOut)} of ${fmt(r.waits)}`],
        ["time to fire all (first → last timeout), ms", fmt(r.fireAllMs)],
        ["deadline → none still due, ms", fmt(r.allDueGoneMs)],
        ["lateness p50 / p99 / max, ms", `${fmt(r.lateness.p50)} / ${fmt(r.lateness.p99)} / ${fmt(r.lateness.max)}`],
        [
          "server metric: lateness sum s / count / mean ms",
          `${fmt(r.metric.sum)} / ${fmt(r.metric.count)} / ${fmt((r.metric.sum / r.metric.count) * 1000)}`,
        ],
        ["sweeper 'overdue without a job' warnings", String(r.sweeperOverdueLogs)],
        ["rendezvous process CPU while firing (1 = a core)", r.serverCpu.toFixed(2)],
        ["redis-server CPU while firing (1 = a core)", r.redis ? r.redis.cpu.toFixed(2) : "—"],
        ...(r.redis?.top ?? []).map((t, i) => [i === 0 ? "busiest commands while firing" : "", t]),
      ],
    );
    printTable(
      `tenant B: POST /v1/waits over HTTP at ${r.rate}/s`,
      ["window", "answers", "p50 / p95 / p99 / max ms", ""],
      [
        latencyRow("unloaded (same run, A pending)", r.unloaded, r.failed.unloaded),
        latencyRow("sweeper lookahead (5 s before)", r.lookahead, r.failed.lookahead),
        latencyRow("while A's waits time out", r.firing, r.failed.firing),
        ["p95 ratio firing / unloaded", "", r.ratioP95.toFixed(2), "target ≤ 2"],
      ],
    );
    const file = saveResults("timeouts-burst", { at: new Date().toISOString(), machine: machine(), ...r });
    progress(`results written to ${file}`);
    if (args.flag("json")) console.log(`TIMEOUTS_BURST_JSON ${JSON.stringify(r)}`);
  } finally {
    await redis?.stop();
  }
}

await main();
