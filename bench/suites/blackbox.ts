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
 * - each configuration and transport first warmed up by rows of the same shape, not
 *   reported (WARMUP_EVENTS);
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
 *   `--cpu-prof`, their self time by category of code over ROW's event phase (bench/lib/cpu-profile.ts;
 *   ROW `one`: the BullMQ worker's one-at-a-time row);
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
  type BlackboxOptions,
  type BlackboxResult,
  type Configuration,
  type LatencyRow,
  printBlackbox,
  SINGLE_IN_FLIGHT,
  type SpanCount,
  type ThroughputRow,
  type Tracing,
} from "../lib/blackbox-report.js";
import {
  CONCURRENCY,
  type Context,
  chainRow,
  HOST_KEY,
  latencyRow,
  PRODUCER_KEY,
  TENANT,
  throughputRow,
} from "../lib/blackbox-rows.js";
import { measureCeiling, RESOLVE_CEILING } from "../lib/ceiling.js";
import { type Poster, poster } from "../lib/http-post.js";
import { type OtlpReceiver, startOtlpReceiver } from "../lib/otlp-receiver.js";
import {
  clkTck,
  nodeVersion,
  productBuild,
  type RoleName,
  type RoleProcess,
  ready,
  startRole,
} from "../lib/product.js";
import { Arrivals, bullmqReceiver, httpReceiver, type Receiver } from "../lib/receivers.js";
import { info, startBenchRedis } from "../lib/redis.js";
import type { Chain } from "../lib/redis-timeline.js";
import { load, machine, saveResults } from "../lib/setup.js";
import { progress } from "../lib/table.js";
import { measureWakeFloor } from "../lib/wake-floor.js";

/**
 * Events of each warm-up row: a process that has served for a while. V8 compiles the
 * request path on its background threads for the first ~10,000 events (measured: the
 * product's other threads ~67 µs per event after 1,000, ~20 after 10,000 or 20,000).
 */
const WARMUP_EVENTS = 10_000;

const ROLES: Record<Configuration, RoleName[]> = {
  start: ["start"],
  split: ["api", "matcher", "dispatcher", "scheduler"],
};

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
    if (opts.profile) profiles = profilesOf(config, opts.profile, throughput, latency, roles, profDir);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  // read after the processes stopped: SIGTERM flushes the spans they still buffered
  const counts = otlp?.counts();
  return { throughput, latency, spans: counts && { config, ...counts, events: sent.events }, profiles, chain };
}

/** Every configuration against the Redis at `redisUrl` (its ceiling measured first). */
export async function blackbox(redisUrl: string, opts: BlackboxOptions): Promise<BlackboxResult> {
  const admin = new Redis(redisUrl, { connectionName: "bench:blackbox-admin" });
  try {
    const loadStart = load();
    const redis = (await info(admin, "server")).get("redis_version") ?? "?";
    progress(`load average ${loadStart}; Redis ceiling (HGET + HSET + XADD + ZREM), ${opts.ceilingSeconds} s`);
    const ceiling = await measureCeiling(redisUrl, opts.ceilingSeconds, 64, RESOLVE_CEILING);
    const wakeFloor = await measureWakeFloor(redisUrl);
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
      wakeFloor,
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
    warmup: args.number("warmup", quick ? Math.min(events, 300) : WARMUP_EVENTS),
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
  if (v !== "single" && v !== "batch" && v !== "http" && v !== "one")
    throw new Error(`--profile: single, batch, http, one (got ${v})`);
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
