/**
 * The black-box benchmark of the resolve path: what users pay, from the outside.
 * `npm run bench:blackbox [-- --quick] [-- --events N] [-- --singles M] [-- --configs start,split]
 * [-- --redis-url URL] [-- --json]`
 *
 * - a private redis-server (AOF on, appendfsync everysec, free loopback port, never 6379,
 *   stopped by PID) unless `--redis-url`; on it, before any product process runs, the Redis
 *   ceiling: one ioredis client, 64 in flight, EVALSHA of HGET + HSET + XADD MAXLEN ~ + ZREM
 *   on keys of one hash tag (bench/lib/ceiling.ts, RESOLVE_CEILING);
 * - the product as real processes of the CLI: `rendezvous start` (every role in one
 *   process), then the split roles `api`, `matcher`, `dispatcher`, `scheduler`, each
 *   configuration on a key prefix of its own;
 * - the host's continuation worker in this (driver) process, concurrency 50: a bullmq
 *   `Worker` on `continuations.<tenant>`, then the client's HTTP claim `ContinuationWorker`
 *   (bench/lib/receivers.ts); "received" = the handler is invoked;
 * - per row, over keep-alive node:http connections (bench/lib/http-post.ts): N waits
 *   registered (`POST /v1/waits`, host key, 64 in flight; not timed), then N events, each
 *   resolving one wait: one per `POST /v1/events` (64 in flight) or `POST /v1/events/batch`
 *   (100 per batch, 4 in flight), producer bearer key;
 *   events/s = N / (first send → last continuation received);
 * - CPU per resolved event: utime + stime (/proc/<pid>/stat, CLK_TCK) of every product
 *   process and of redis-server, sampled at the start and the end of the event phase
 *   only, divided by N; product and Redis apart and summed, in µs;
 * - one at a time: M events sent one after another, each after the previous one's
 *   continuation arrived; send → continuation received p50 / p90 / p99.
 *
 * - tracing (`--tracing off,on`, both by default): each configuration runs once without
 *   `OTEL_*` variables and once exporting its spans over OTLP/HTTP to a receiver in this process
 *   (bench/lib/otlp-receiver.ts) that counts them; both reported side by side.
 *
 * - where the CPU goes (off by default, each costs some CPU of its own): `--breakdown`, Redis's own
 *   time per command, script and client process over each row's event phase (a SLOWLOG of every
 *   command, bench/lib/redis-breakdown.ts); `--profile ROW`, the product processes under
 *   `--cpu-prof`, their self time by category of code over ROW's event phase (bench/lib/cpu-profile.ts);
 *   with either, each process's CPU by thread (bench/lib/blackbox-breakdown.ts prints them).
 *
 * Driver, product and Redis share the machine: the load average at start and end, the
 * core count and the Node and Redis versions are printed with the tables.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { availableParallelism, tmpdir } from "node:os";
import { join } from "node:path";
import { Redis } from "ioredis";
import { parseArgs } from "../lib/args.js";
import { type ProcessProfile, type ProfiledRow, profilesOf } from "../lib/blackbox-breakdown.js";
import {
  BATCH,
  BATCH_IN_FLIGHT,
  type BlackboxOptions,
  type BlackboxResult,
  type Configuration,
  type HopName,
  type LatencyRow,
  printBlackbox,
  SINGLE_IN_FLIGHT,
  type SpanCount,
  type ThroughputRow,
  type Tracing,
} from "../lib/blackbox-report.js";
import { measureCeiling, RESOLVE_CEILING } from "../lib/ceiling.js";
import { type Poster, poster } from "../lib/http-post.js";
import { type OtlpReceiver, startOtlpReceiver } from "../lib/otlp-receiver.js";
import { runPool } from "../lib/pool.js";
import {
  clkTck,
  cpuSnapshot,
  markThreads,
  nodeVersion,
  productBuild,
  type RoleName,
  type RoleProcess,
  ready,
  startRole,
  threadsSince,
} from "../lib/product.js";
import { Arrivals, bullmqReceiver, httpReceiver, type Receiver, type Transport } from "../lib/receivers.js";
import { info, quiesce, startBenchRedis } from "../lib/redis.js";
import { socketOwners, startBreakdown } from "../lib/redis-breakdown.js";
import { type Chain, RedisTimeline } from "../lib/redis-timeline.js";
import { load, machine, saveResults } from "../lib/setup.js";
import { sleep, summarize } from "../lib/stats.js";
import { fmt, progress } from "../lib/table.js";

const TENANT = "acme";
const HOST_KEY = "hk_blackbox";
const PRODUCER_KEY = "pk_blackbox";
const EVENT_TYPE = "bench.done";
const CONCURRENCY = 50;
const ROLES: Record<Configuration, RoleName[]> = {
  start: ["start"],
  split: ["api", "matcher", "dispatcher", "scheduler"],
};

const producerHeaders = {
  authorization: `Bearer ${PRODUCER_KEY}`,
  "rendezvous-producer": `${TENANT}/svc`,
};

let labels = 0;

/** Registers `n` waits over HTTP (64 in flight); their correlation ids, in order, and wait ids. */
async function register(http: Poster, n: number): Promise<{ correlationIds: string[]; waitIds: string[] }> {
  const label = `b${process.pid}x${++labels}`;
  const correlationIds = Array.from({ length: n }, (_, i) => `${label}-${i}`);
  const waitIds: string[] = new Array(n);
  const headers = { authorization: `Bearer ${HOST_KEY}` };
  await runPool(n, 64, async (i) => {
    const id = correlationIds[i] as string;
    const body = { runId: id, position: "p", eventType: EVENT_TYPE, correlationId: id, timeoutMs: 3_600_000 };
    const r = JSON.parse(await http.post("/v1/waits", headers, body, 201)) as { wait: { id: string } };
    waitIds[i] = r.wait.id;
  });
  return { correlationIds, waitIds };
}

const event = (correlationId: string) => ({ id: `e-${correlationId}`, type: EVENT_TYPE, correlationId });

/** Sends one event per correlation id: one per request (64 in flight) or in batches (100, 4 in flight). */
async function send(http: Poster, correlationIds: string[], producers: "single" | "batch"): Promise<void> {
  if (producers === "single") {
    await runPool(correlationIds.length, SINGLE_IN_FLIGHT, async (i) => {
      await http.post("/v1/events", producerHeaders, event(correlationIds[i] as string), 202);
    });
    return;
  }
  await runPool(Math.ceil(correlationIds.length / BATCH), BATCH_IN_FLIGHT, async (b) => {
    const events = correlationIds.slice(b * BATCH, (b + 1) * BATCH).map(event);
    await http.post("/v1/events/batch", producerHeaders, { events }, 200);
  });
}

/** Every arrival, or an error naming how many are missing after `maxMs`. */
async function arrivalsOf(arrivals: Arrivals, expected: Array<Promise<number>>, maxMs: number): Promise<number[]> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new Error(`${arrivals.outstanding} continuations not received after ${maxMs} ms`)),
      maxMs,
    );
  });
  try {
    return await Promise.race([Promise.all(expected), timeout]);
  } finally {
    clearTimeout(timer);
  }
}

interface Context {
  config: Configuration;
  tracing: Tracing;
  /** events sent so far (warm-ups included) */
  sent: { events: number };
  /** keep-alive connections to the API (as many as requests in flight) */
  http: Poster;
  admin: Redis;
  arrivals: Arrivals;
  pids: Record<string, number>;
  redisUrl: string;
  redisPid: number;
  ceiling: number;
  /** --breakdown: log every Redis command of the measured rows' event phases */
  breakdown: boolean;
}

/** N waits, then N events resolving them; events/s and CPU per event over the event phase. */
async function throughputRow(
  ctx: Context,
  transport: Transport,
  producers: "single" | "batch",
  n: number,
  warmup = false,
): Promise<ThroughputRow> {
  progress(`${ctx.config}: registering ${fmt(n)} waits`);
  const { correlationIds, waitIds } = await register(ctx.http, n);
  await quiesce(ctx.admin);
  const pids = { ...ctx.pids, redis: ctx.redisPid };
  // the idle cost: CPU of the same processes over a second with nothing to do
  const idle0 = cpuSnapshot(pids);
  const idleFrom = performance.now();
  await sleep(1000);
  const idle1 = cpuSnapshot(pids);
  const idleSeconds = (performance.now() - idleFrom) / 1000;
  progress(`${ctx.config}: ${fmt(n)} events (${producers}, ${transport} worker)`);
  const expected = waitIds.map((id) => ctx.arrivals.expect(id));
  ctx.sent.events += n;
  // every command of the phase logged (set last before the phase starts, undone after it ends)
  const logged = ctx.breakdown && !warmup ? await startBreakdown(ctx.admin, Math.min(4_000_000, n * 120)) : undefined;
  const mark = markThreads(pids);
  const cpu0 = cpuSnapshot(pids);
  const driver0 = process.cpuUsage();
  const t0 = performance.now();
  const sending = send(ctx.http, correlationIds, producers);
  sending.catch(() => undefined);
  const at = await arrivalsOf(ctx.arrivals, expected, 60_000 + n * 10).catch(async (err: unknown) => {
    // a failed row leaves a --redis-url server as it found it (SLOWLOG settings restored)
    await logged?.(new Map()).catch(() => undefined);
    throw err;
  });
  const cpu1 = cpuSnapshot(pids);
  const threads = threadsSince(mark, pids);
  const driver = process.cpuUsage(driver0);
  const redisPort = Number(new URL(ctx.redisUrl).port);
  const owners = logged && socketOwners({ ...ctx.pids, driver: process.pid }, redisPort);
  const redisBreakdown = logged && owners ? await logged(owners) : undefined;
  await sending;
  const seconds = (Math.max(...at) - t0) / 1000;
  const us = (name: string) => (((cpu1[name] as number) - (cpu0[name] as number)) * 1e6) / n;
  const byProcess = Object.fromEntries(Object.keys(ctx.pids).map((name) => [name, us(name)]));
  const product = Object.values(byProcess).reduce((s, v) => s + v, 0);
  const redis = us("redis");
  const idleMs = (names: string[]) =>
    (names.reduce((sum, k) => sum + (idle1[k] as number) - (idle0[k] as number), 0) * 1000) / idleSeconds;
  return {
    config: ctx.config,
    tracing: ctx.tracing,
    producers,
    transport,
    events: n,
    seconds,
    eventsPerSec: n / seconds,
    ofCeiling: n / seconds / ctx.ceiling,
    cpu: { product, redis, sum: product + redis, byProcess, driver: (driver.user + driver.system) / n },
    idle: { product: idleMs(Object.keys(ctx.pids)), redis: idleMs(["redis"]) },
    ...threads,
    ...(redisBreakdown ? { redisBreakdown } : {}),
  };
}

/** M events one at a time: send → continuation received, each after the previous one arrived. */
async function latencyRow(
  ctx: Context,
  transport: Transport,
  m: number,
  timeline?: RedisTimeline,
): Promise<LatencyRow> {
  progress(`${ctx.config}: registering ${fmt(m)} waits`);
  const { correlationIds, waitIds } = await register(ctx.http, m);
  await quiesce(ctx.admin);
  await sleep(500);
  progress(`${ctx.config}: ${fmt(m)} events one at a time (${transport} worker)`);
  const ms: number[] = [];
  const hops: Record<HopName, number[]> = { answer: [], accept: [], match: [], dispatch: [], wake: [], invoke: [] };
  // performance.now() as epoch ms, to compare with the times the continuation carries
  const epoch = (t: number) => performance.timeOrigin + t;
  const pids = { ...ctx.pids, redis: ctx.redisPid };
  const cpu0 = cpuSnapshot(pids);
  ctx.arrivals.keepMarks = true;
  ctx.sent.events += m;
  for (let i = 0; i < m; i++) {
    const waitId = waitIds[i] as string;
    const arrived = ctx.arrivals.expect(waitId);
    const sent = event(correlationIds[i] as string);
    const traced = timeline?.begin(sent.id, waitId);
    const t0 = performance.now();
    await ctx.http.post("/v1/events", producerHeaders, sent, 202);
    const answered = performance.now();
    const [at] = await arrivalsOf(ctx.arrivals, [arrived], 30_000);
    if (traced) timeline?.end(traced, epoch(t0), epoch(at as number));
    ms.push((at as number) - t0);
    hops.answer.push(answered - t0);
    const k = ctx.arrivals.marksOf(waitId);
    if (!k) continue;
    // (the product's marks are whole ms: each hop's mean is what its sum is made of)
    hops.accept.push(k.accepted - epoch(t0));
    hops.match.push(k.matched - k.accepted);
    hops.dispatch.push(k.created - k.matched);
    hops.wake.push(k.active - k.created);
    hops.invoke.push(epoch(at as number) - k.active);
  }
  const cpu1 = cpuSnapshot(pids);
  ctx.arrivals.keepMarks = false;
  const us = (names: string[]) =>
    (names.reduce((sum, k) => sum + (cpu1[k] as number) - (cpu0[k] as number), 0) * 1e6) / m;
  const cpu = { product: us(Object.keys(ctx.pids)), redis: us(["redis"]) };
  const perHop = Object.fromEntries(
    Object.entries(hops)
      .filter(([, v]) => v.length > 0)
      .map(([name, v]) => [name, summarize(v)]),
  ) as LatencyRow["hops"];
  return { config: ctx.config, tracing: ctx.tracing, transport, latency: summarize(ms), hops: perHop, cpu };
}

/**
 * The product processes' tracing variables: none (every OTEL_* of this environment removed),
 * or an OTLP/HTTP JSON exporter to the bench's receiver.
 */
function tracingEnv(receiver: OtlpReceiver | undefined): Record<string, string | undefined> {
  const env: Record<string, string | undefined> = {};
  for (const k of Object.keys(process.env)) if (k.startsWith("OTEL_")) env[k] = undefined;
  if (!receiver) return env;
  return {
    ...env,
    OTEL_TRACES_EXPORTER: "otlp",
    OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: receiver.endpoint,
    OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: "http/json",
  };
}

async function runConfiguration(
  config: Configuration,
  tracing: Tracing,
  redisUrl: string,
  admin: Redis,
  ceiling: number,
  opts: BlackboxOptions,
): Promise<{
  throughput: ThroughputRow[];
  latency: LatencyRow[];
  spans: SpanCount | undefined;
  profiles: ProcessProfile[];
  chain: Chain | undefined;
}> {
  const prefix = `bb${config}${tracing}${Date.now().toString(36)}`;
  const dir = mkdtempSync(join(tmpdir(), "rdv-blackbox-"));
  const configFile = join(dir, "config.json");
  const productConfig = {
    partitions: opts.partitions,
    tenants: {
      [TENANT]: { hostKeys: [HOST_KEY], producers: { svc: { keys: [PRODUCER_KEY], eventTypes: ["bench.*"] } } },
    },
  };
  writeFileSync(configFile, JSON.stringify(productConfig));
  const otlp = tracing === "on" ? await startOtlpReceiver() : undefined;
  const env = tracingEnv(otlp);
  // --profile: every process of the configuration writes a CPU profile when it exits
  const profDir = join(dir, "profiles");
  const nodeArgs = [
    ...opts.nodeArgs,
    ...(opts.profile
      ? ["--cpu-prof", "--cpu-prof-dir", profDir, "--cpu-prof-interval", String(opts.profileInterval)]
      : []),
  ];
  const roles: RoleProcess[] = ROLES[config].map((name) =>
    startRole(name, { redisUrl, configFile, prefix, env, nodeArgs, bin: opts.bin, node: opts.node }),
  );
  const sent = { events: 0 };
  const arrivals = new Arrivals();
  let receiver: Receiver | undefined;
  let http: Poster | undefined;
  const throughput: ThroughputRow[] = [];
  const latency: LatencyRow[] = [];
  let chain: Chain | undefined;
  try {
    const urls = await Promise.all(roles.map((r) => r.url));
    await Promise.all(urls.map((u) => ready(u)));
    const base = urls[0] as string;
    const pids = Object.fromEntries(roles.map((r) => [r.name, r.pid]));
    const redisPid = Number((await info(admin, "server")).get("process_id"));
    http = poster(base, SINGLE_IN_FLIGHT);
    const breakdown = opts.breakdown;
    const ctx: Context = { config, tracing, sent, http, admin, arrivals, pids, redisUrl, redisPid, ceiling, breakdown };
    progress(`${config}, tracing ${tracing}: ${roles.map((r) => `${r.name} pid ${r.pid}`).join(", ")}; warm-up`);
    receiver = bullmqReceiver(arrivals, { redisUrl, prefix, tenant: TENANT, concurrency: CONCURRENCY });
    await throughputRow(ctx, "bullmq", "single", opts.warmup, true);
    await throughputRow(ctx, "bullmq", "batch", opts.warmup, true);
    throughput.push(await throughputRow(ctx, "bullmq", "single", opts.events));
    throughput.push(await throughputRow(ctx, "bullmq", "batch", opts.events));
    latency.push(await latencyRow(ctx, "bullmq", opts.singles));
    if (opts.timeline) chain = await chainRow(ctx, opts.singles, latency.at(-1)?.latency.p50);
    await receiver.close();
    receiver = httpReceiver(arrivals, { baseUrl: base, hostKey: HOST_KEY, concurrency: CONCURRENCY });
    await throughputRow(ctx, "http", "single", Math.min(opts.warmup, 500), true);
    throughput.push(await throughputRow(ctx, "http", "single", opts.events));
    latency.push(await latencyRow(ctx, "http", opts.singles));
  } catch (err) {
    for (const r of roles) process.stderr.write(`--- ${r.name} (last lines)\n${r.output().slice(-3000)}\n`);
    throw err;
  } finally {
    await receiver?.close().catch(() => undefined);
    http?.close();
    await Promise.all(roles.map((r) => r.stop()));
    await otlp?.close();
  }
  let profiles: ProcessProfile[] = [];
  try {
    if (opts.profile) profiles = profilesOf(config, opts.profile, throughput, roles, profDir);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  // read after the processes stopped: SIGTERM flushes the spans they still buffered
  const counts = otlp?.counts();
  return { throughput, latency, spans: counts && { config, ...counts, events: sent.events }, profiles, chain };
}

/** --timeline: the BullMQ one-at-a-time row again, under a MONITOR connection (redis-timeline.ts). */
async function chainRow(ctx: Context, m: number, unmonitoredP50: number | undefined): Promise<Chain> {
  const timeline = new RedisTimeline(ctx.redisUrl);
  await timeline.start();
  try {
    await latencyRow(ctx, "bullmq", m, timeline);
  } finally {
    await timeline.stop();
  }
  return { config: ctx.config, tracing: ctx.tracing, unmonitoredP50, ...timeline.summary() };
}

/** Every configuration against the Redis at `redisUrl` (its ceiling measured first). */
export async function blackbox(redisUrl: string, opts: BlackboxOptions): Promise<BlackboxResult> {
  const admin = new Redis(redisUrl, { connectionName: "bench:blackbox-admin" });
  try {
    const loadStart = load();
    const redis = (await info(admin, "server")).get("redis_version") ?? "?";
    progress(`load average ${loadStart}; Redis ceiling (HGET + HSET + XADD + ZREM), ${opts.ceilingSeconds} s`);
    const ceiling = await measureCeiling(redisUrl, opts.ceilingSeconds, 64, RESOLVE_CEILING);
    const throughput: ThroughputRow[] = [];
    const latency: LatencyRow[] = [];
    const spans: SpanCount[] = [];
    const profiles: ProcessProfile[] = [];
    const chains: Chain[] = [];
    for (const config of opts.configs) {
      for (const tracing of opts.tracing) {
        const r = await runConfiguration(config, tracing, redisUrl, admin, ceiling.callsPerSec, opts);
        throughput.push(...r.throughput);
        latency.push(...r.latency);
        if (r.spans) spans.push(r.spans);
        profiles.push(...r.profiles);
        if (r.chain) chains.push(r.chain);
      }
    }
    const cores = availableParallelism();
    return {
      opts,
      product: productBuild(opts.bin),
      node: process.version,
      productNode: opts.node ? nodeVersion(opts.node) : process.version,
      redis,
      cores,
      clkTck: clkTck(),
      loadStart,
      loadEnd: load(),
      ceiling,
      throughput,
      latency,
      spans,
      ...(opts.profile ? { profiles } : {}),
      ...(opts.timeline ? { chains } : {}),
    };
  } finally {
    await admin.quit();
  }
}

export function blackboxOptions(args = parseArgs()): BlackboxOptions {
  const quick = args.flag("quick");
  const events = args.number("events", quick ? 1000 : 10_000);
  const configs = args.string("configs", "start,split").split(",") as Configuration[];
  for (const c of configs) if (!(c in ROLES)) throw new Error(`--configs: start, split (got ${c})`);
  const tracing = args.string("tracing", "off,on").split(",") as Tracing[];
  for (const t of tracing) if (t !== "off" && t !== "on") throw new Error(`--tracing: off, on (got ${t})`);
  return {
    events,
    singles: args.number("singles", quick ? 200 : 500),
    warmup: args.number("warmup", Math.min(events, quick ? 300 : 1000)),
    partitions: args.number("partitions", 16),
    ceilingSeconds: args.number("ceiling-seconds", quick ? 2 : 5),
    configs,
    tracing,
    breakdown: args.flag("breakdown"),
    profile: profiledRow(args.flag("profile") ? "single" : args.string("profile", "")),
    profileInterval: args.number("profile-interval", 500),
    nodeArgs: args.string("node-args", "").split(/\s+/).filter(Boolean),
    bin: args.string("bin", "") || undefined,
    node: args.string("node", "") || undefined,
    timeline: args.flag("timeline"),
  };
}

function profiledRow(v: string): ProfiledRow | undefined {
  if (v === "") return undefined;
  if (v !== "single" && v !== "batch" && v !== "http") throw new Error(`--profile: single, batch, http (got ${v})`);
  return v;
}

export async function main(): Promise<void> {
  const args = parseArgs();
  const opts = blackboxOptions(args);
  const url = args.string("redis-url", "");
  const server = url ? undefined : await startBenchRedis(60 * 60_000);
  try {
    const r = await blackbox(url || (server?.url as string), opts);
    printBlackbox(r);
    const file = saveResults("blackbox", { at: new Date().toISOString(), machine: machine(), ...r });
    progress(`results written to ${file}`);
    if (args.flag("json")) console.log(`BLACKBOX_JSON ${JSON.stringify(r)}`);
  } finally {
    await server?.stop();
  }
}
