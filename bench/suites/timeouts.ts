/**
 * Timeout precision and memory per pending wait. See docs/benchmarks.md.
 *
 * 1. precision: N waits registered through store.register (200 in flight) with
 *    timeouts spread uniformly over 5–15 s; one Scheduler in this process (bucket
 *    worker + sweeper); each wait's lateness = resolution.at − deadline (both Redis
 *    time) read back from the wait.
 * 2. memory: used_memory before/after M pending waits, a) deadlines 1 h ahead (the
 *    sweeper makes no job for them), b) deadlines 3–4 s ahead with schedule() called
 *    right after each register, measured before anything fires (the scheduler's
 *    worker is not started), then the queue is obliterated to price one bucket job.
 */

import { monitorEventLoopDelay } from "node:perf_hooks";
import { parkedSlotKey, type Resources, WAIT_BODY_LENGTH } from "@rendezvous/engine";
import { Scheduler, type SchedulerOptions, TIMEOUT_QUEUE } from "@rendezvous/workers";
import { QueueEvents } from "bullmq";
import type { Redis } from "ioredis";
import { parseArgs } from "../lib/args.js";
import { measureCeiling } from "../lib/ceiling.js";
import { type StageStats, Stages } from "../lib/instrument.js";
import { runPool } from "../lib/pool.js";
import {
  info,
  memoryUsage,
  openWindow,
  quiesce,
  scanKeys,
  startBenchRedis,
  startPingProbe,
  usedMemory,
  type Window,
  watchAofRewrites,
} from "../lib/redis.js";
import {
  correlationIds,
  EVENT_TYPE,
  load,
  machine,
  POSITION,
  resources,
  runId,
  saveResults,
  TENANT,
} from "../lib/setup.js";
import { sleep, summarize } from "../lib/stats.js";
import { fmt, pct, printTable, progress } from "../lib/table.js";

const LATENESS_TARGET_P99_MS = 100;
const BYTES_TARGET = 600;

export interface Registered {
  id: string;
  partition: number;
  deadline: number;
}

/** Registers `count` waits (in flight at once: `inFlight`); `after` runs right after each one. */
export async function registerWaits(
  res: Resources,
  count: number,
  inFlight: number,
  when: (i: number) => { timeoutMs: number } | { deadline: string },
  after?: (w: Registered) => Promise<unknown>,
): Promise<{ waits: Registered[]; seconds: number }> {
  const ids = correlationIds(count);
  const waits: Registered[] = new Array(count);
  const t0 = performance.now();
  let done = 0;
  const tick = setInterval(() => progress(`  registered ${done}/${count}`), 5000);
  try {
    await runPool(count, inFlight, async (i) => {
      const { wait } = await res.store.register(TENANT, {
        runId: runId(),
        position: POSITION,
        eventType: EVENT_TYPE,
        correlationId: ids[i] as string,
        ...when(i),
      });
      const w = {
        id: wait.id,
        partition: res.store.keys.waitPartition(wait.id) as number,
        deadline: Date.parse(wait.deadline ?? ""),
      };
      waits[i] = w;
      if (after) await after(w);
      done++;
    });
  } finally {
    clearInterval(tick);
  }
  return { waits, seconds: (performance.now() - t0) / 1000 };
}

/** Deadlines indexed: the deadline indexes' entries and the parked ones (16 bytes each in their slot strings). */
async function pendingDeadlines(res: Resources): Promise<number> {
  let n = 0;
  for (const p of res.store.keys.allPartitions()) {
    const k = res.store.keys.partition(p);
    n += await res.redis.zcard(k.deadlines);
    for (const slot of await res.redis.zrange(k.parked, "0", "-1"))
      n += (await res.redis.strlen(parkedSlotKey(k, slot))) / WAIT_BODY_LENGTH;
  }
  return n;
}

function topCommands(w: Window, n = 8): Array<Array<string | number>> {
  return w.commands
    .slice(0, n)
    .map((c) => [c.command, c.calls, Math.round(c.usec / 1000), Number(c.usecPerCall.toFixed(1))]);
}

export async function precision(
  url: string,
  opts: {
    waits: number;
    spread: [number, number];
    inFlight: number;
    partitions: number;
    ceiling: number;
    scheduler: SchedulerOptions;
    /** a plain connection for INFO */
    admin: Redis;
  },
) {
  const res = resources(url, "tp", opts.partitions);
  const scheduler = new Scheduler(res, opts.scheduler);
  const stages = new Stages();
  stages.wrap("sweep (every 1 s: read 5 s ahead, add bucket jobs)", scheduler, "sweep");
  stages.wrap("queue.addBulk (bucket jobs, 1 pipeline per call)", scheduler.queue, "addBulk");
  stages.wrap("fireDue (a bucket job's work)", scheduler, "fireDue");
  const loopDelay = monitorEventLoopDelay({ resolution: 5 });
  // where a bucket job's time goes: its id names its due time (t.<at>);
  // the queue's event stream ids are the Redis times of promotion, start and end
  const jobStages = { promoted: [] as number[], active: [] as number[], completed: [] as number[] };
  const events = new QueueEvents(TIMEOUT_QUEUE, {
    connection: res.connect("bench-events", { blocking: true }),
    prefix: res.prefix,
  });
  const dueOf = (jobId: string) => Number(jobId.split(".")[1]);
  const at = (streamId: string) => Number(streamId.split("-")[0]);
  events.on("waiting", ({ jobId, prev }, id) => {
    if (prev === "delayed") jobStages.promoted.push(at(id) - dueOf(jobId));
  });
  events.on("active", ({ jobId }, id) => jobStages.active.push(at(id) - dueOf(jobId)));
  events.on("completed", ({ jobId }, id) => jobStages.completed.push(at(id) - dueOf(jobId)));
  await events.waitUntilReady();
  await scheduler.start();
  const stopProbe = await startPingProbe(url);
  const stopRewrites = watchAofRewrites(opts.admin);
  loopDelay.enable();
  const [lo, hi] = opts.spread;
  progress(`precision: registering ${opts.waits} waits, timeouts ${lo}–${hi} ms, ${opts.inFlight} in flight`);
  const close = await openWindow(opts.admin);
  let scheduled = 0;
  const reg = await registerWaits(
    res,
    opts.waits,
    opts.inFlight,
    () => ({ timeoutMs: Math.round(lo + Math.random() * (hi - lo)) }),
    async (w) => {
      // as the register path does: schedule right after registering (no-op beyond the lookahead)
      const added = await scheduler.schedule([{ deadline: w.deadline }]);
      scheduled += added;
    },
  );
  const registerRate = opts.waits / reg.seconds;
  progress(`  ${Math.round(registerRate)} registrations/s; ${scheduled} bucket jobs added by schedule()`);
  const lastDeadline = Math.max(...reg.waits.map((w) => w.deadline));
  const giveUpAt = lastDeadline + 30_000;
  for (;;) {
    const left = await pendingDeadlines(res);
    if (left === 0) break;
    if (Date.now() > giveUpAt) {
      progress(`  giving up: ${left} waits still pending 30 s after the last deadline`);
      break;
    }
    await sleep(250);
  }
  const window = await close();
  loopDelay.disable();
  const pings = summarize(await stopProbe());
  const rewrites = await stopRewrites();
  const stageStats: Map<string, StageStats> = stages.take();
  await scheduler.stop();
  await events.close();

  const bucketMs = opts.scheduler.bucketMs ?? 20;
  const lateness: number[] = [];
  const jobLateness: number[] = [];
  // waits due while an AOF rewrite ran, or in the second after it ended (the backlog it left)
  const nearRewrite = (deadline: number) => rewrites.some((w) => deadline >= w.start && deadline <= w.end + 1000);
  const latenessAway: number[] = [];
  let timedOut = 0;
  let swept = 0;
  for (let i = 0; i < reg.waits.length; i += 1000) {
    const chunk = reg.waits.slice(i, i + 1000);
    const waits = await res.store.getWaits(chunk.map((w) => w.id));
    waits.forEach((wait, j) => {
      if (wait?.state !== "timed_out" || !wait.resolution) return;
      timedOut++;
      if (wait.history.some((h) => h.what === "sweeper_rescheduled")) swept++;
      const deadline = (chunk[j] as Registered).deadline;
      const at = Date.parse(wait.resolution.at);
      lateness.push(at - deadline);
      if (!nearRewrite(deadline)) latenessAway.push(at - deadline);
      // the bucket job is due at the end of the 20 ms bucket holding the deadline
      jobLateness.push(at - Math.ceil(deadline / bucketMs) * bucketMs);
    });
  }
  await res.close();
  const s = summarize(lateness);
  const j = summarize(jobLateness);
  const pass = timedOut === opts.waits && s.p99 <= LATENESS_TARGET_P99_MS;
  return {
    registerRate,
    registerRatio: registerRate / opts.ceiling,
    scheduled,
    timedOut,
    swept,
    lateness: s,
    jobLateness: j,
    /** the AOF rewrites during the run, and the lateness of the waits not due during one or the second after */
    rewrites: rewrites.map((w) => ({ ...w, ms: w.end - w.start })),
    latenessAwayFromRewrites: summarize(latenessAway),
    bucketJobs: {
      promoted: summarize(jobStages.promoted),
      active: summarize(jobStages.active),
      completed: summarize(jobStages.completed),
    },
    pass,
    window,
    pings,
    eventLoopDelay: {
      p50: loopDelay.percentile(50) / 1e6,
      p99: loopDelay.percentile(99) / 1e6,
      max: loopDelay.max / 1e6,
    },
    stages: stageStats,
  };
}

export interface MemoryCase {
  label: string;
  waits: number;
  registerRate: number;
  before: number;
  after: number;
  bytesPerWait: number;
  jobs: number;
  /** MEMORY USAGE per key kind (suffix), summed over partitions */
  byKind: Record<string, { keys: number; bytes: number }>;
  /** MEMORY USAGE of :w + :iw + :dl + :dp + :dp:<slot> + :r, summed */
  crossCheck: number;
  queueKeysBytes: number;
  jobBytes?: number;
  /** one wait's entries: byte lengths and the encodings of its keys */
  sample: Record<string, string | number>;
}

/** The entries of one wait in each key (lengths) and the keys' encodings: what the bytes are made of. */
async function sampleWait(res: Resources, r: Redis, waitId: string): Promise<Record<string, string | number>> {
  const k = res.store.keys.partition(res.store.keys.waitPartition(waitId) as number);
  const record = (await r.hget(k.waits, waitId)) ?? "";
  const [iw] = await r.zrange(k.waiting, "0", "0");
  const runKeys = await scanKeys(r, `{${res.prefix}:p*}:r`);
  const [run] = runKeys[0] ? await r.zrange(runKeys[0], "0", "0") : [];
  const enc = async (key: string) => String(await r.object("ENCODING", key));
  return {
    "w field (wait id) bytes": waitId.length,
    "w value (wait record JSON) bytes": record.length,
    "iw member bytes": iw?.length ?? 0,
    "deadline entry bytes":
      (await r.zscore(k.deadlines, waitId)) === null ? "16 (parked)" : `${waitId.length} (:dl member)`,
    "r member bytes": run?.length ?? 0,
    "w encoding": await enc(k.waits),
    "iw encoding": await enc(k.waiting),
    "dl encoding": await enc(k.deadlines),
    "dp (parked slots) encoding": await enc(k.parked),
    "r encoding": runKeys[0] ? await enc(runKeys[0]) : "-",
    "wait record": record,
    "r member": run ?? "",
  };
}

async function byKind(redis: Redis, prefix: string): Promise<Record<string, { keys: number; bytes: number }>> {
  const out: Record<string, { keys: number; bytes: number }> = {};
  const keys = await scanKeys(redis, `{${prefix}:p*}:*`);
  for (const key of keys) {
    // (the parked slots' strings, ":dp:<slot start>", as one kind)
    const kind = key.slice(key.indexOf("}") + 1).replace(/^:dp:\d+$/, ":dp:<slot>");
    const bytes = await memoryUsage(redis, [key]);
    const k = out[kind] ?? { keys: 0, bytes: 0 };
    out[kind] = k;
    k.keys++;
    k.bytes += bytes;
  }
  return out;
}

/** One memory case on a flushed server: returns the measured numbers. */
export type MemoryMode = "far" | "dense" | "register-path";

/**
 * One memory case on a flushed server.
 * - far: deadlines 1 h ahead; schedule() after each register and one sweep (both add nothing).
 * - dense: deadlines 1 h ahead within one second; then one schedule() for all of them by a
 *   scheduler whose lookahead reaches them, so the bucket jobs exist exactly as the sweeper
 *   makes them when the window comes within its lookahead (a job's size does not depend on
 *   its delay).
 * - register-path: timeouts 3–4 s, schedule() right after each register; the worker is not
 *   started, so nothing fires before the measurement.
 */
export async function memoryCase(
  url: string,
  admin: Redis,
  label: string,
  prefix: string,
  opts: { waits: number; inFlight: number; partitions: number },
  mode: MemoryMode,
  /** registration fields every wait adds (a completion token, heartbeatMs: docs/api.md) */
  extra: { token?: boolean; heartbeatMs?: number } = {},
): Promise<MemoryCase> {
  await admin.flushall("SYNC");
  const res = resources(url, prefix, opts.partitions);
  const scheduler = new Scheduler(res, mode === "dense" ? { lookaheadMs: 2 * 3_600_000 } : {});
  // warm-up on another prefix: scripts loaded, connections open, BullMQ queue known
  const warm = resources(url, `${prefix}warm`, opts.partitions);
  await registerWaits(warm, 50, 10, () => ({ timeoutMs: 3_600_000 }));
  await warm.close();
  await scheduler.queue.waitUntilReady();
  await admin.flushall("SYNC");
  await quiesce(admin);
  await sleep(200);
  const before = await usedMemory(admin);

  progress(`memory ${label}: registering ${opts.waits} waits`);
  const windowStart = Math.ceil((Date.now() + 3_600_000) / 1000) * 1000;
  const when =
    mode === "far"
      ? () => ({ timeoutMs: 3_600_000, ...extra })
      : mode === "dense"
        ? () => ({ deadline: new Date(windowStart + Math.floor(Math.random() * 1000)).toISOString() })
        : () => ({ timeoutMs: Math.round(3000 + Math.random() * 1000) });
  const reg = await registerWaits(res, opts.waits, opts.inFlight, when, async (w) => {
    if (mode !== "dense") await scheduler.schedule([{ deadline: w.deadline }]);
  });
  if (mode === "dense") {
    await scheduler.schedule(reg.waits.map((w) => ({ deadline: w.deadline })));
    // the window within the sweep's reach: its parked deadlines are in the deadline index then
    await res.store.promoteMany(res.store.keys.allPartitions(), 2 * 3_600_000, 1000);
  }
  if (mode === "far") await scheduler.sweep(); // what the sweeper would add for them: nothing, beyond the lookahead
  const pending = await pendingDeadlines(res);
  if (pending !== opts.waits) throw new Error(`memory ${label}: ${pending} pending, expected ${opts.waits}`);
  const jobs = await scheduler.queue.getDelayedCount();
  await quiesce(admin);
  await sleep(200);
  const after = await usedMemory(admin);
  const kinds = await byKind(admin, prefix);
  const crossCheck = ["w", "iw", "dl", "dp", "dp:<slot>", "r"].reduce((s, k) => s + (kinds[`:${k}`]?.bytes ?? 0), 0);
  const queueKeys = await scanKeys(admin, `${prefix}:timeouts:*`);
  const queueKeysBytes = await memoryUsage(admin, queueKeys);
  const result: MemoryCase = {
    label,
    waits: opts.waits,
    registerRate: opts.waits / reg.seconds,
    before,
    after,
    bytesPerWait: (after - before) / opts.waits,
    jobs,
    byKind: kinds,
    crossCheck,
    queueKeysBytes,
    sample: await sampleWait(res, admin, (reg.waits[0] as Registered).id),
  };
  if (jobs > 0) {
    await scheduler.queue.obliterate({ force: true });
    await quiesce(admin);
    await sleep(200);
    result.jobBytes = (after - (await usedMemory(admin))) / jobs;
  }
  await scheduler.stop();
  await res.close();
  return result;
}

export async function main(): Promise<void> {
  const args = parseArgs();
  const quick = args.flag("quick");
  const waits = args.number("waits", quick ? 1000 : 10_000);
  const memoryWaits = args.number("memory-waits", quick ? 5000 : 100_000);
  const [lo, hi] = args
    .string("spread", quick ? "1-2" : "5-15")
    .split("-")
    .map((s) => Number(s) * 1000) as [number, number];
  const inFlight = args.number("in-flight", 200);
  const partitions = args.number("partitions", 16);
  const ceilingSeconds = args.number("ceiling-seconds", quick ? 1 : 5);
  if (!(lo > 0 && hi >= lo)) throw new Error("--spread MIN-MAX in seconds, e.g. 5-15");
  // the scheduler's own defaults unless given (to try other settings)
  const schedulerOptions: Required<
    Pick<SchedulerOptions, "bucketMs" | "concurrency" | "sweepIntervalMs" | "lookaheadMs">
  > = {
    bucketMs: args.number("bucket-ms", 20),
    concurrency: args.number("concurrency", 4),
    sweepIntervalMs: args.number("sweep-ms", 1000),
    lookaheadMs: args.number("lookahead-ms", 5000),
  };
  const skipMemory = args.flag("skip-memory");

  const server = await startBenchRedis(quick ? 120_000 : 20 * 60_000);
  const { Redis } = await import("ioredis");
  const admin = new Redis(server.url, { connectionName: "bench:admin" });
  try {
    const version = (await info(admin, "server")).get("redis_version");
    console.log(`rendezvous bench:timeouts — ${new Date().toISOString()}`);
    console.log(
      `machine: ${machine()}; redis ${version}, appendonly yes, appendfsync everysec; ${partitions} partitions${quick ? "; --quick" : ""}`,
    );
    console.log(`load average (1/5/15 min) at start: ${load()}`);

    const ceiling = await measureCeiling(server.url, ceilingSeconds);
    const p = await precision(server.url, {
      waits,
      spread: [lo, hi],
      inFlight,
      partitions,
      ceiling: ceiling.callsPerSec,
      scheduler: schedulerOptions,
      admin,
    });
    const so = schedulerOptions;

    printTable(
      `Timeout precision: ${waits} waits, timeouts uniform over ${lo / 1000}–${hi / 1000} s, one scheduler (bucket ${so.bucketMs} ms, sweep ${so.sweepIntervalMs} ms, lookahead ${so.lookaheadMs} ms, concurrency ${so.concurrency})`,
      ["", "p50", "p90", "p99", "max", "min"],
      [
        [
          "lateness = resolution.at − deadline (ms)",
          p.lateness.p50,
          p.lateness.p90,
          p.lateness.p99,
          p.lateness.max,
          p.lateness.min,
        ],
        [
          `  waits not due during an AOF rewrite or the second after (${fmt(p.latenessAwayFromRewrites.count)})`,
          p.latenessAwayFromRewrites.p50,
          p.latenessAwayFromRewrites.p90,
          p.latenessAwayFromRewrites.p99,
          p.latenessAwayFromRewrites.max,
          p.latenessAwayFromRewrites.min,
        ],
        [
          "  of which after the bucket end (ms)",
          p.jobLateness.p50,
          p.jobLateness.p90,
          p.jobLateness.p99,
          p.jobLateness.max,
          p.jobLateness.min,
        ],
        ...(["promoted", "active", "completed"] as const).map((k) => {
          const b = p.bucketJobs[k];
          return [`bucket job due → ${k} (ms, ${b.count} jobs)`, b.p50, b.p90, b.p99, b.max, b.min];
        }),
      ],
    );
    console.log(
      `AOF rewrites during the run: ${p.rewrites.length}${p.rewrites.length > 0 ? ` (${p.rewrites.map((w) => `${fmt(w.ms)} ms`).join(", ")})` : ""}`,
    );
    console.log(
      `timed out: ${p.timedOut} of ${waits}${p.timedOut === waits ? "" : "  ← NOT ALL"}; fired by the sweeper as overdue: ${p.swept}`,
    );
    console.log(
      `registrations: ${fmt(p.registerRate)}/s (2 scripts each) = ${pct(p.registerRatio)} of the Lua ceiling (${fmt(ceiling.callsPerSec)} calls/s)`,
    );
    console.log(
      `${p.pass ? "PASS" : "MISS"}: p99 lateness ${fmt(p.lateness.p99)} ms (target ≤ ${LATENESS_TARGET_P99_MS} ms), all timed out: ${p.timedOut === waits}`,
    );
    console.log(
      `redis CPU ${pct(p.window.redisCpu, 0)} of a core, this process ${pct(p.window.nodeCpu, 0)} over ${fmt(p.window.wallMs / 1000)} s`,
    );
    printTable(
      "Redis time by command during the precision run",
      ["command", "calls", "ms", "µs/call"],
      topCommands(p.window),
    );
    const wall = p.window.wallMs;
    printTable(
      `Where the scheduler's time goes (${fmt(wall / 1000)} s)`,
      ["stage", "calls", "items/call", "ms/call", "max ms", "busy"],
      [...p.stages].map(([name, st]) => [
        name,
        st.calls,
        Number((st.items / Math.max(1, st.calls)).toFixed(1)),
        Number((st.totalMs / Math.max(1, st.calls)).toFixed(2)),
        Number(st.maxMs.toFixed(1)),
        pct(st.busyMs / wall, 0),
      ]),
    );
    console.log(
      `PING every 5 ms from this process on its own connection (stalls of Redis or of this event loop), round trip p50 / p99 / max: ${fmt(p.pings.p50, 2)} / ${fmt(p.pings.p99, 1)} / ${fmt(p.pings.max, 1)} ms; ` +
        `event-loop delay of this process p50 / p99 / max: ${fmt(p.eventLoopDelay.p50, 1)} / ${fmt(p.eventLoopDelay.p99, 1)} / ${fmt(p.eventLoopDelay.max, 1)} ms`,
    );
    if (skipMemory) {
      console.log(`load average (1/5/15 min) at end: ${load()}`);
      return;
    }

    const mem = { waits: memoryWaits, inFlight, partitions };
    const far = await memoryCase(server.url, admin, "a) deadlines 1 h ahead", "ma", mem, "far");
    const dense = await memoryCase(server.url, admin, "b) all in one 1 s window, scheduled", "mb", mem, "dense");
    const path = await memoryCase(
      server.url,
      admin,
      "c) timeouts 3–4 s, scheduled per register",
      "mc",
      mem,
      "register-path",
    );
    // the same as a), each wait with a completion token (its hash), and with a token and heartbeatMs
    const token = await memoryCase(server.url, admin, "d) as a), with a completion token", "md", mem, "far", {
      token: true,
    });
    const heartbeat = await memoryCase(server.url, admin, "e) as a), with a token and heartbeatMs", "me", mem, "far", {
      token: true,
      heartbeatMs: 60_000,
    });
    const cases = [far, dense, path, token, heartbeat];
    printTable(
      `Redis memory per pending wait (${memoryWaits} waits, used_memory after − before, everything included)`,
      [
        "case",
        "bytes/wait",
        "target",
        "",
        "bucket jobs",
        "jobs/wait",
        "MEMORY USAGE :w+:iw+:dl+:dp+:r per wait",
        "queue keys/wait",
      ],
      cases.map((c) => [
        c.label,
        Math.round(c.bytesPerWait),
        `≤ ${BYTES_TARGET}`,
        c.bytesPerWait <= BYTES_TARGET ? "PASS" : "MISS",
        c.jobs,
        Number((c.jobs / c.waits).toFixed(3)),
        Math.round(c.crossCheck / c.waits),
        Math.round(c.queueKeysBytes / c.waits),
      ]),
    );
    const kinds = [...new Set(cases.flatMap((c) => Object.keys(c.byKind)))].sort();
    printTable(
      "MEMORY USAGE by partition key kind, bytes per wait (summed over partitions)",
      ["key", ...cases.map((c) => c.label)],
      kinds.map((k) => [`{prefix:pN}${k}`, ...cases.map((c) => Math.round((c.byKind[k]?.bytes ?? 0) / c.waits))]),
    );
    const jobBytes = path.jobBytes ?? dense.jobBytes;
    if (jobBytes !== undefined) {
      const maxJobs = partitions * Math.ceil(schedulerOptions.lookaheadMs / schedulerOptions.bucketMs);
      console.log(
        `one bucket job (delayed; priced by obliterating the queue afterwards): ${fmt(jobBytes, 0)} bytes. ` +
          `A running scheduler keeps at most partitions × lookahead / bucket = ${fmt(maxJobs)} of them (${fmt((maxJobs * jobBytes) / 2 ** 20, 1)} MiB) whatever the number of waits; ` +
          `case c holds more because nothing fires during the measurement. A wait alone in its bucket costs ≈ ${fmt(far.bytesPerWait + jobBytes, 0)} bytes while its job exists (a + one job).`,
      );
    }
    const sample = Object.entries(far.sample);
    printTable(
      "What one pending wait is made of (case a, one sample)",
      ["", "value"],
      sample.filter(([, v]) => typeof v === "number" || v.length < 20),
    );
    for (const [k, v] of sample) if (typeof v === "string" && v.length >= 20) console.log(`${k}: ${v}`);
    console.log(`load average (1/5/15 min) at end: ${load()}`);
    const file = saveResults("timeouts", {
      at: new Date().toISOString(),
      machine: machine(),
      quick,
      ceiling,
      precision: {
        ...p,
        stages: Object.fromEntries(p.stages),
        window: { ...p.window, commands: p.window.commands.slice(0, 20) },
      },
      memory: cases,
    });
    progress(`results written to ${file}`);
  } finally {
    await admin.quit();
    await server.stop();
  }
}
