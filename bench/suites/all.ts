/**
 * `npm run bench`: every scenario of issue 6 in one run, against one private
 * redis-server (AOF everysec, `--fsync always` as an option), the Lua ceiling measured
 * once at the start and every throughput reported as events/s and as a fraction of it.
 * It reuses the e2e and timeouts suites (their functions, same code paths). A progress
 * bar per scenario on stderr, one summary table on stdout, everything measured in
 * bench/results/<time>.json (git-ignored). See docs/performance.md.
 */
import { spawn } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { availableParallelism } from "node:os";
import { fileURLToPath } from "node:url";
import { createResources, parseConfig, type Resources } from "@rendezvous/engine";
import type { Queue } from "bullmq";
import cliProgress from "cli-progress";
import { pino } from "pino";
import { buildApp } from "../../packages/http/src/app.js";
import { parseArgs } from "../lib/args.js";
import { type BlackboxResult, blackboxRows } from "../lib/blackbox-report.js";
import { measureCeiling } from "../lib/ceiling.js";
import { childBench } from "../lib/child.js";
import { Stages } from "../lib/instrument.js";
import { runPool } from "../lib/pool.js";
import { info, startBenchRedis } from "../lib/redis.js";
import { correlationIds, EVENT_TYPE, load, machine, POSITION, PRODUCER, runId, TENANT } from "../lib/setup.js";
import { sleep } from "../lib/stats.js";
import { fmt, pct, printTable, progress, setProgressSink } from "../lib/table.js";
import { fairnessOptions, quotaFairness } from "../quota-fairness.js";
import type { BurstResult } from "../timeouts-burst.js";
import { continuationsBench } from "./continuations.js";
import { event, ingest, oneAtATime, paced, registerTargets, startPath, type Target, throughput } from "./e2e.js";
import { registerPending, type ScaleRun, scaleBench } from "./scale.js";
import { shapesBench } from "./shapes.js";
import { memoryCase, precision } from "./timeouts.js";

const HOST_KEY = "hk_bench_all";
const PRODUCER_KEY = "pk_bench_all";

interface Row {
  scenario: string;
  metric: string;
  value: string;
  ceiling: string;
  target: string;
  verdict: string;
}

/** One progress bar per scenario on stderr; the suites' progress lines go into its text. */
async function scenario<T>(name: string, steps: number, run: (step: () => void) => Promise<T>): Promise<T> {
  const bar = new cliProgress.SingleBar(
    {
      format: `${name.padEnd(34)} [{bar}] {value}/{total} {duration_formatted} {note}`,
      stream: process.stderr,
      hideCursor: false,
      barsize: 24,
      etaBuffer: 1,
      noTTYOutput: true,
      notTTYSchedule: 5000,
    },
    cliProgress.Presets.shades_classic,
  );
  bar.start(steps, 0, { note: "" });
  setProgressSink((m) => bar.update({ note: m.trim().slice(0, 70) }));
  try {
    return await run(() => bar.increment());
  } finally {
    bar.update(steps);
    bar.stop();
    setProgressSink(undefined);
  }
}

export async function main(): Promise<void> {
  const args = parseArgs();
  const quick = args.flag("quick");
  const fsync = args.string("fsync", "everysec");
  if (fsync !== "everysec" && fsync !== "always") throw new Error("--fsync everysec | always");
  const partitions = args.number("partitions", 16);
  const ceilingSeconds = args.number("ceiling-seconds", quick ? 1 : 5);
  const waits = args.number("waits", quick ? 2000 : 20_000);
  const latencySeconds = args.number("latency-seconds", quick ? 2 : 10);
  const singles = args.number("singles", quick ? 30 : 300);
  const registrations = args.number("registrations", quick ? 2000 : 20_000);
  const timerWaits = args.number("timer-waits", quick ? 3000 : 100_000);
  const timerSpread: [number, number] = quick ? [1000, 4000] : [5000, 65_000];
  const scaleBig = args.number("scale-waits", quick ? 50_000 : 1_000_000);
  const memoryWaits = args.number("memory-waits", quick ? 5000 : 100_000);
  const httpSingles = args.number("http-singles", quick ? 1000 : 5000);
  const burstWaits = args.number("burst-waits", quick ? 5000 : 50_000);
  const blackboxEvents = args.number("blackbox-events", quick ? 500 : 10_000);
  const blackboxSingles = args.number("blackbox-singles", quick ? 100 : 500);
  const blackboxTracing = args.string("blackbox-tracing", "off,on");
  // the product processes' Node binary (the driver's by default)
  const blackboxNode = args.string("blackbox-node", "");
  const shapeWaits = args.number("shape-waits", quick ? 2000 : 20_000);
  const batch = 100;
  const batchesInFlight = 4;
  const started = performance.now();

  const server = await startBenchRedis(quick ? 120_000 : 40 * 60_000, fsync);
  const { Redis } = await import("ioredis");
  const admin = new Redis(server.url, { connectionName: "bench:admin" });
  const prefix = "all";
  const path = startPath(server.url, prefix, partitions);
  const { api, matcher, dispatcher, queue, added } = path;
  const stages = new Stages();
  const rows: Row[] = [];
  const closers: Array<() => Promise<void>> = [];
  const results: Record<string, unknown> = {};
  let ceilingPerSec = Number.NaN;
  const ofCeiling = (v: number) => pct(v / ceilingPerSec);
  const add = (r: Partial<Row> & { scenario: string; metric: string; value: string }) =>
    rows.push({ ceiling: "", target: "", verdict: "", ...r });
  const verdict = (ok: boolean) => (ok ? "PASS" : "MISS");

  try {
    const version = (await info(admin, "server")).get("redis_version");
    console.log(`rendezvous bench — ${new Date().toISOString()}`);
    console.log(
      `machine: ${machine()}; redis ${version}, appendonly yes, appendfsync ${fsync}; ${partitions} partitions${quick ? "; --quick" : ""}`,
    );
    console.log(`load average (1/5/15 min) at start: ${load()}`);
    const ceiling = await scenario("0. Lua ceiling", 1, async (step) => {
      const c = await measureCeiling(server.url, ceilingSeconds);
      step();
      return c;
    });
    ceilingPerSec = ceiling.callsPerSec;
    results.ceiling = ceiling;
    add({
      scenario: "0. ceiling",
      metric: "Lua 4-command script, 64 in flight, calls/s",
      value: fmt(ceilingPerSec),
      ceiling: "100 %",
    });

    await added.events.waitUntilReady();
    await matcher.start();
    await dispatcher.start();

    // 1. e2e throughput, in-process matcher + dispatcher, batch ingest through the Store
    const tp = await scenario("1. e2e throughput (batch)", 2, async (step) => {
      progress(`registering ${waits} waits`);
      const targets = await registerTargets(api, waits, 200);
      step();
      progress(`ingesting ${waits} events`);
      const r = await throughput(api, admin, queue, stages, targets, {
        batch,
        inFlight: batchesInFlight,
        maxMs: quick ? 40_000 : 300_000,
      });
      step();
      return r;
    });
    results.throughput = { ...tp, stages: Object.fromEntries(tp.stages), window: undefined };
    add({
      scenario: "1. e2e throughput",
      metric: `Store batch ingest → continuation job, events/s (10–90 %, ${fmt(waits)} events)`,
      value: fmt(tp.steadyPerSec),
      ceiling: ofCeiling(tp.steadyPerSec),
      target: "≥ 10,000/s and ≥ 14 %",
      verdict: verdict(tp.complete && tp.steadyPerSec >= 10_000 && tp.steadyPerSec / ceilingPerSec >= 0.14),
    });
    add({
      scenario: "1. e2e throughput",
      metric: "  whole run incl. ramp and tail, events/s",
      value: fmt(tp.eventsPerSec),
      ceiling: ofCeiling(tp.eventsPerSec),
    });
    const httpApp = await startHttpApp(server.url, partitions);
    closers.push(() => httpApp.close());
    const httpTp = await scenario("1. e2e throughput (HTTP)", 2, async (step) => {
      progress(`HTTP batch: ${waits} events, batches of ${batch}, ${batchesInFlight} requests in flight`);
      const b = await httpThroughput(httpApp, api, queue, waits, batch, batchesInFlight);
      step();
      progress(`HTTP single: ${httpSingles} events, 64 requests in flight`);
      const s = await httpThroughput(httpApp, api, queue, httpSingles, 1, 64);
      step();
      return { batch: b, single: s };
    });
    results.httpThroughput = httpTp;
    add({
      scenario: "1. e2e throughput",
      metric: `HTTP POST /v1/events/batch (in-process app, ${batchesInFlight} in flight) → job, events/s (10–90 %)`,
      value: fmt(httpTp.batch.steadyPerSec),
      ceiling: ofCeiling(httpTp.batch.steadyPerSec),
      target: httpTp.batch.complete ? "" : `only ${httpTp.batch.events} of ${waits}`,
    });
    add({
      scenario: "1. e2e throughput",
      metric: `HTTP POST /v1/events, one event per request, 64 in flight → job, events/s (10–90 %)`,
      value: fmt(httpTp.single.steadyPerSec),
      ceiling: ofCeiling(httpTp.single.steadyPerSec),
      target: httpTp.single.complete ? "" : `only ${httpTp.single.events} of ${httpSingles}`,
    });

    // 2. e2e latency: half the sustained rate, and one at a time
    const lat = await scenario("2. e2e latency", 3, async (step) => {
      const rate = Math.max(10, Math.floor(tp.steadyPerSec / 2));
      const n = Math.max(50, Math.round(rate * latencySeconds));
      progress(`registering ${n} waits`);
      const latTargets = await registerTargets(api, n, 200);
      await sleep(300);
      step();
      progress(`${n} events paced at ${rate}/s`);
      const half = await paced(api, admin, added, stages, latTargets, rate, 10);
      step();
      const singleTargets = await registerTargets(api, singles, 50);
      await sleep(300);
      progress(`${singles} events one at a time`);
      const single = await oneAtATime(api, added, singleTargets);
      step();
      return { rate, half, single };
    });
    results.latency = {
      rate: lat.rate,
      half: { ...lat.half, window: undefined, stages: undefined },
      single: lat.single,
    };
    add({
      scenario: "2. e2e latency",
      metric: "one at a time, ingest returned → job added, p50 / p99 / max ms",
      value: `${fmt(lat.single.fromReturn.p50)} / ${fmt(lat.single.fromReturn.p99)} / ${fmt(lat.single.fromReturn.max)}`,
      target: "p50 ≤ 1.5 ms",
      verdict: verdict(lat.single.fromReturn.p50 <= 1.5),
    });
    add({
      scenario: "2. e2e latency",
      metric: "one at a time, ingest called → job added, p50 / p99 ms",
      value: `${fmt(lat.single.fromCall.p50)} / ${fmt(lat.single.fromCall.p99)}`,
    });
    add({
      scenario: "2. e2e latency",
      metric: `at half rate (${fmt(lat.rate)}/s), returned → added, p50 / p99 / max ms`,
      value: `${fmt(lat.half.fromReturn.p50)} / ${fmt(lat.half.fromReturn.p99)} / ${fmt(lat.half.fromReturn.max)}`,
      target: lat.half.missing > 0 ? `${lat.half.missing} jobs not seen` : "",
    });

    // 3. registration throughput: in-process Store, and HTTP POST /v1/waits
    const reg = await scenario("3. registration", 2, async (step) => {
      progress(`Store: ${registrations} waits, 200 in flight`);
      const t0 = performance.now();
      await registerTargets(api, registrations, 200);
      const store = registrations / ((performance.now() - t0) / 1000);
      step();
      progress(`HTTP: ${registrations} waits, 64 in flight`);
      const http = await httpRegistrations(httpApp, registrations, 64);
      step();
      return { store, http };
    });
    results.registration = reg;
    add({
      scenario: "3. registration",
      metric: "in-process store.register, waits/s (200 in flight)",
      value: fmt(reg.store),
      ceiling: ofCeiling(reg.store),
    });
    add({
      scenario: "3. registration",
      metric: "HTTP POST /v1/waits (in-process app, 64 in flight), waits/s",
      value: fmt(reg.http),
      ceiling: ofCeiling(reg.http),
    });

    // 4. timers: the timeouts suite's precision run
    const timers = await scenario("4. timers", 1, async (step) => {
      const p = await precision(server.url, {
        waits: timerWaits,
        spread: timerSpread,
        inFlight: 200,
        partitions,
        ceiling: ceilingPerSec,
        scheduler: { bucketMs: 20, concurrency: 4, sweepIntervalMs: 1000, lookaheadMs: 5000 },
        admin,
      });
      step();
      return p;
    });
    results.timers = { ...timers, window: undefined, stages: Object.fromEntries(timers.stages) };
    add({
      scenario: "4. timers",
      metric: `lateness p50 / p99 / max ms (${fmt(timerWaits)} waits over ${timerSpread[0] / 1000}–${timerSpread[1] / 1000} s)`,
      value: `${fmt(timers.lateness.p50)} / ${fmt(timers.lateness.p99)} / ${fmt(timers.lateness.max)}`,
      target: `p99 ≤ 50 ms with 100k pending${timerWaits < 100_000 ? " (fewer here)" : ""}`,
      verdict: verdict(timers.timedOut === timerWaits && timers.lateness.p99 <= 50),
    });
    add({
      scenario: "4. timers",
      metric: `  waits not due during an AOF rewrite or the second after (${timers.rewrites.length} rewrites: ${timers.rewrites.map((w) => `${fmt(w.ms)} ms`).join(", ") || "none"})`,
      value: `${fmt(timers.latenessAwayFromRewrites.p50)} / ${fmt(timers.latenessAwayFromRewrites.p99)} / ${fmt(timers.latenessAwayFromRewrites.max)}`,
    });
    add({
      scenario: "4. timers",
      metric: "timed out",
      value: `${fmt(timers.timedOut)} of ${fmt(timerWaits)}`,
    });

    // 6. buffered events (run before scale: scale leaves many pending waits behind)
    const buffered = await scenario("6. buffered", 3, async (step) => bufferedRun(api, queue, waits, step));
    results.buffered = buffered;
    // 5. scale: e2e throughput with 1k vs many active waits (suites/scale.ts: AOF rewrites waited out)
    const scale = await scenario("5. scale", 6, (step) =>
      scaleBench(
        { api, admin, queue, stages },
        { waits, big: scaleBig, batch, inFlight: batchesInFlight, maxMs: quick ? 40_000 : 300_000 },
        step,
      ),
    );
    results.scale = scale;

    // memory per pending wait (flushes the server: last)
    await matcher.stop();
    await dispatcher.stop();
    const memory = await scenario("5. memory per pending wait", 1, async (step) => {
      const m = await memoryCase(
        server.url,
        admin,
        "a) far deadlines",
        "mem",
        { waits: memoryWaits, inFlight: 200, partitions },
        "far",
      );
      step();
      return m;
    });
    results.memory = memory;

    const ratio = scale.r2 / scale.r1;
    add({
      scenario: "5. scale",
      metric: `e2e events/s with ${fmt(scale.small)} pending waits (best of 2: ${runsText(scale.runs1)})`,
      value: fmt(scale.r1),
      ceiling: ofCeiling(scale.r1),
    });
    add({
      scenario: "5. scale",
      metric: `e2e events/s with ${fmt(scale.big)} pending waits (best of 2: ${runsText(scale.runs2)}; AOF rewritten before, ${fmt(scale.rewriteSeconds, 0)} s)`,
      value: fmt(scale.r2),
      ceiling: ofCeiling(scale.r2),
    });
    add({
      scenario: "5. scale",
      metric: `ratio ${fmt(scale.big)} / ${fmt(scale.small)}`,
      value: ratio.toFixed(2),
      target: `≥ 0.9 (1M / 1k)${scale.big < 1_000_000 ? "; fewer here" : ""}`,
      verdict: verdict(ratio >= 0.9),
    });
    add({
      scenario: "5. scale",
      metric: "bulk registration (1,000 in flight), waits/s",
      value: fmt(scale.bulkRate),
      ceiling: ofCeiling(scale.bulkRate),
    });
    add({
      scenario: "5. memory",
      metric: `Redis bytes per pending wait (${fmt(memoryWaits)} waits, deadline 1 h ahead)`,
      value: fmt(memory.bytesPerWait),
      target: "≤ 500 bytes",
      verdict: verdict(memory.bytesPerWait <= 500),
    });
    add({
      scenario: "6. buffered",
      metric: "50 % of events before their waits, events/s (incl. those registrations)",
      value: fmt(buffered.eventsPerSec),
      ceiling: ofCeiling(buffered.eventsPerSec),
      target: buffered.complete ? "" : `only ${buffered.jobs} of ${buffered.events}`,
    });
    const horizontal = await scenario("7. horizontal", 1, async (step) => {
      const r = await scaleOut(server.url, quick ? 600 : 4000);
      step();
      return r;
    });
    results.horizontal = horizontal;
    const one = horizontal.find((r) => r.matchers === 1);
    const two = horizontal.find((r) => r.matchers === 2);
    if (one && two) {
      add({
        scenario: "7. horizontal",
        metric: "1 → 2 matcher processes (api, dispatcher as processes), resolved events/s",
        value: `${fmt(one.resolvedPerSec)} → ${fmt(two.resolvedPerSec)} (×${(two.resolvedPerSec / one.resolvedPerSec).toFixed(2)})`,
        ceiling: ofCeiling(two.resolvedPerSec),
        target: `${cores()} cores shared by every process`,
      });
      add({
        scenario: "7. horizontal",
        metric: "1 → 2 matchers draining a backlog, events/s",
        value: `${fmt(one.drainPerSec)} → ${fmt(two.drainPerSec)} (×${(two.drainPerSec / one.drainPerSec).toFixed(2)})`,
        ceiling: ofCeiling(two.drainPerSec),
      });
    }

    // 8. continuations to a host: HTTP claim vs the BullMQ transport, same run, same waits
    const cont = await scenario("8. continuations", 1, async (step) => {
      const r = await continuationsBench(server.url, args.number("continuation-waits", 2000));
      step();
      return r;
    });
    results.continuations = cont;
    add({
      scenario: "8. continuations",
      metric: `HTTP claim → consume → ack vs BullMQ transport → consume, continuations/s (${fmt(cont.waits)} waits each, 32 at once)`,
      value: `${fmt(cont.httpPerSec)} vs ${fmt(cont.bullmqPerSec)} (×${cont.ratio.toFixed(2)})`,
      target: `load ${cont.load}`,
    });

    // 9. timeouts burst: bench/timeouts-burst.ts (a real `rendezvous start`) against this Redis
    const burst = await scenario("9. timeouts burst", 1, async (step) => {
      const r = await childBench<BurstResult>(
        "../timeouts-burst.ts",
        ["--redis-url", server.url, "--waits", String(burstWaits)],
        "TIMEOUTS_BURST_JSON ",
      );
      step();
      return r;
    });
    results.timeoutsBurst = burst;
    add({
      scenario: "9. timeouts burst",
      metric: `${fmt(burst.waits)} waits sharing one deadline: time to fire all (first → last), ms`,
      value: fmt(burst.fireAllMs),
      target: `${fmt(burst.timedOut)} of ${fmt(burst.waits)} timed out`,
    });
    add({
      scenario: "9. timeouts burst",
      metric: "  their lateness p50 / p99 / max, ms",
      value: `${fmt(burst.lateness.p50)} / ${fmt(burst.lateness.p99)} / ${fmt(burst.lateness.max)}`,
    });
    add({
      scenario: "9. timeouts burst",
      metric: `  another tenant's POST /v1/waits p95 meanwhile / unloaded, ms (${burst.rate}/s over HTTP)`,
      value: `${fmt(burst.firing.p95)} / ${fmt(burst.unloaded.p95)} (×${burst.ratioP95.toFixed(2)})`,
      target: "≤ 2× unloaded",
      verdict: verdict(burst.ratioP95 <= 2),
    });

    // 10. black box: bench/blackbox.ts (real processes, HTTP producers, a host worker) against this Redis
    const blackbox = await scenario("10. black box", 1, async (step) => {
      const sizes = [
        "--events",
        String(blackboxEvents),
        "--singles",
        String(blackboxSingles),
        "--tracing",
        blackboxTracing,
        ...(blackboxNode ? ["--node", blackboxNode] : []),
      ];
      const r = await childBench<BlackboxResult>(
        "../blackbox.ts",
        ["--redis-url", server.url, ...sizes, ...(quick ? ["--quick", "--configs", "start"] : [])],
        "BLACKBOX_JSON ",
      );
      step();
      return r;
    });
    results.blackbox = blackbox;
    for (const row of blackboxRows(blackbox)) add({ scenario: "10. black box", ...row });

    // 11. quota fairness: bench/quota-fairness.ts against this Redis (a prefix of its own)
    const fair = await scenario("11. quota fairness", 1, async (step) => {
      const r = await quotaFairness(server.url, { ...fairnessOptions(quick), partitions });
      step();
      return r;
    });
    results.quotaFairness = fair;
    add({
      scenario: "11. quota fairness",
      metric: `a tenant's p99 accepted → continuation, one event at a time, while another floods at its producerEventsPerSec (${fmt(fair.options.floodRate)}/s) / alone, ms`,
      value: `${fmt(fair.flooded.p99)} / ${fmt(fair.alone.p99)} (×${fair.ratioP99.toFixed(2)})`,
      target: `flood accepted ${fmt(fair.floodAcceptedPerSec)}/s, ${fmt(fair.floodRefused)} refused`,
    });

    // 12. the wait shapes side by side (bench/suites/shapes.ts; flushes the server)
    const shapes = await scenario("12. wait shapes", 1, async (step) => {
      const r = await shapesBench(server.url, admin, { waits: shapeWaits, partitions });
      step();
      return r;
    });
    results.shapes = shapes;
    for (const r of shapes) {
      add({
        scenario: "12. shapes",
        metric: `match events/s, ${r.shape} (${fmt(r.waits)} waits, ${fmt(r.events)} events)`,
        value: fmt(r.eventsPerSec),
        ceiling: ofCeiling(r.eventsPerSec),
        target: `${fmt(r.waitsPerSec)} waits resolved/s`,
      });
      add({ scenario: "12. shapes", metric: `Redis bytes per pending wait, ${r.shape}`, value: fmt(r.bytesPerWait) });
    }

    const order = (s: string) => Number.parseInt(s, 10);
    rows.sort((a, b) => order(a.scenario) - order(b.scenario));
    printTable(
      `rendezvous bench${quick ? " --quick" : ""} (appendfsync ${fsync}): throughput as events/s and as a fraction of the Lua ceiling`,
      ["scenario", "metric", "value", "of ceiling", "target / note", ""],
      rows.map((r) => [r.scenario, r.metric, r.value, r.ceiling, r.target, r.verdict]),
    );
    console.log(`load average (1/5/15 min) at end: ${load()}; ${fmt((performance.now() - started) / 1000)} s in all`);
    const dir = new URL("../results/", import.meta.url);
    mkdirSync(dir, { recursive: true });
    const file = new URL(`${new Date().toISOString().replace(/[:.]/g, "-")}.json`, dir);
    writeFileSync(
      file,
      `${JSON.stringify({ at: new Date().toISOString(), machine: machine(), quick, fsync, rows, results }, null, 2)}\n`,
    );
    progress(`results written to ${file.pathname}`);
  } finally {
    for (const close of closers) await close().catch(() => undefined);
    await path.close();
    await admin.quit();
    await server.stop();
  }
}

/** A scale condition's runs: events/s, and the forks (AOF rewrites) during each, if any. */
function runsText(runs: ScaleRun[]): string {
  return runs.map((r) => `${fmt(r.rate)}${r.forks > 0 ? ` (${r.forks} fork)` : ""}`).join(", ");
}

/** 50 % of the events before their waits: all events ingested, then the missing waits registered. */
async function bufferedRun(api: Resources, queue: Queue, count: number, step: () => void) {
  const half = Math.floor(count / 2);
  const ids = correlationIds(count);
  // the second half: waits registered first (not timed)
  const late: Target[] = [];
  await runPool(count - half, 200, async (i) => {
    const correlationId = ids[half + i] as string;
    const { wait } = await registerPending(api, correlationId);
    late.push({ waitId: wait.id, correlationId, eventId: `evt_buf_${correlationId}` });
  });
  step();
  const early: Target[] = ids
    .slice(0, half)
    .map((correlationId) => ({ waitId: "", correlationId, eventId: `evt_buf_${correlationId}` }));
  const all = [...early, ...late].sort(() => Math.random() - 0.5);
  const base = await queue.getWaitingCount();
  const t0 = performance.now();
  progress(`ingesting ${count} events (${half} without a wait yet)`);
  await runPool(Math.ceil(all.length / 100), 4, async (b) => {
    await ingest(api, all.slice(b * 100, (b + 1) * 100));
  });
  const until = async (n: number) => {
    const limit = Date.now() + 60_000;
    for (;;) {
      const c = (await queue.getWaitingCount()) - base;
      if (c >= n || Date.now() > limit) return c;
      await sleep(20);
    }
  };
  await until(count - half);
  step();
  progress(`registering ${half} waits whose events are buffered`);
  await runPool(half, 200, async (i) => {
    await registerPending(api, ids[i] as string);
  });
  const jobs = await until(count);
  const seconds = (performance.now() - t0) / 1000;
  step();
  return { events: count, jobs, seconds, eventsPerSec: jobs / seconds, complete: jobs >= count };
}

interface HttpApp {
  base: string;
  close(): Promise<void>;
}

/** The server's app (buildApp: ingest + host routes) in this process on a free port, same prefix. */
async function startHttpApp(url: string, partitions: number): Promise<HttpApp> {
  const res = createResources({
    redisUrl: url,
    prefix: "all",
    config: parseConfig({
      partitions,
      tenants: {
        [TENANT]: {
          hostKeys: [HOST_KEY],
          producers: { [PRODUCER]: { keys: [PRODUCER_KEY], eventTypes: [EVENT_TYPE] } },
        },
      },
    }),
    logger: pino({ level: "warn" }, pino.destination(2)),
  });
  const app = await buildApp({ res, roles: ["api"], running: () => true });
  const base = await app.listen({ port: 0, host: "127.0.0.1" });
  return {
    base,
    async close() {
      await app.close();
      await res.close();
    },
  };
}

async function postJson(url: string, headers: Record<string, string>, body: unknown, ok: number): Promise<void> {
  const r = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify(body),
  });
  if (r.status !== ok) throw new Error(`POST ${url}: ${r.status} ${await r.text()}`);
  await r.arrayBuffer();
}

const producerHeaders = {
  authorization: `Bearer ${PRODUCER_KEY}`,
  "rendezvous-producer": `${TENANT}/${PRODUCER}`,
};

/**
 * E2e through HTTP: waits registered through the Store first, then their events POSTed
 * (batches of `batch`, or one per request with batch = 1), `inFlight` requests at once;
 * the run ends when every continuation job is waiting in the queue.
 */
async function httpThroughput(
  http: HttpApp,
  api: Resources,
  queue: Queue,
  count: number,
  batch: number,
  inFlight: number,
): Promise<{ events: number; seconds: number; eventsPerSec: number; steadyPerSec: number; complete: boolean }> {
  const targets = await registerTargets(api, count, 200);
  const base = await queue.getWaitingCount();
  const t0 = performance.now();
  let failed: unknown;
  const sending = runPool(Math.ceil(count / batch), inFlight, async (b) => {
    const chunk = targets.slice(b * batch, (b + 1) * batch).map(event);
    if (batch === 1) await postJson(`${http.base}/v1/events`, producerHeaders, chunk[0], 202);
    else await postJson(`${http.base}/v1/events/batch`, producerHeaders, { events: chunk }, 200);
  }).catch((err) => {
    failed = err;
  });
  const samples: Array<[number, number]> = [];
  for (;;) {
    if (failed) throw failed;
    const c = (await queue.getWaitingCount()) - base;
    const ms = performance.now() - t0;
    samples.push([ms, c]);
    if (c >= count || ms > 120_000) break;
    await sleep(20);
  }
  await sending;
  const crossing = (f: number) => (samples.find(([, c]) => c >= f * count) ?? [Number.NaN])[0];
  const [endMs, endCount] = samples[samples.length - 1] as [number, number];
  return {
    events: endCount,
    seconds: endMs / 1000,
    eventsPerSec: endCount / (endMs / 1000),
    steadyPerSec: (0.8 * count) / ((crossing(0.9) - crossing(0.1)) / 1000),
    complete: endCount >= count,
  };
}

/** POST /v1/waits against the in-process app, `inFlight` requests at once. */
async function httpRegistrations(http: HttpApp, count: number, inFlight: number): Promise<number> {
  const ids = correlationIds(count);
  const post = (i: number) =>
    postJson(
      `${http.base}/v1/waits`,
      { authorization: `Bearer ${HOST_KEY}` },
      { runId: runId(), position: POSITION, eventType: EVENT_TYPE, correlationId: ids[i], timeoutMs: 3_600_000 },
      201,
    );
  for (let i = 0; i < 100; i++) await post(i); // warm-up
  const t0 = performance.now();
  await runPool(count - 100, inFlight, (i) => post(i + 100));
  return (count - 100) / ((performance.now() - t0) / 1000);
}

interface ScaleOutRow {
  matchers: number;
  resolvedPerSec: number;
  drainPerSec: number;
}

/**
 * Scenario 7: `bench/scaleout.ts` as a child process (it runs the CLI roles as their
 * own processes) against this run's Redis; its rows come back as one JSON line.
 */
async function scaleOut(redisUrl: string, events: number): Promise<ScaleOutRow[]> {
  const script = fileURLToPath(new URL("../scaleout.ts", import.meta.url));
  const child = spawn(
    process.execPath,
    [
      ...process.execArgv,
      "--conditions=@rendezvous/source",
      script,
      "--redis-url",
      redisUrl,
      "--events",
      String(events),
      "--json",
    ],
    { stdio: ["ignore", "pipe", "pipe"] },
  );
  let out = "";
  let err = "";
  child.stdout.on("data", (d: Buffer) => {
    out += d.toString();
  });
  child.stderr.on("data", (d: Buffer) => {
    err += d.toString();
    for (const line of d.toString().split("\n")) if (line.trim()) progress(`scaleout: ${line.trim()}`);
  });
  const code = await new Promise<number | null>((resolve) => child.once("exit", resolve));
  const line = out.split("\n").find((l) => l.startsWith("SCALEOUT_JSON "));
  if (code !== 0 || !line) throw new Error(`bench/scaleout.ts failed (exit ${code}):\n${err.slice(-2000)}`);
  return JSON.parse(line.slice("SCALEOUT_JSON ".length)) as ScaleOutRow[];
}

function cores(): number {
  return availableParallelism();
}
