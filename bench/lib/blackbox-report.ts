/**
 * What the black-box benchmark (bench/suites/blackbox.ts) measures, its tables, and
 * its rows in `npm run bench` (bench/suites/all.ts) with the targets of issue 21.
 */
import {
  type BrokenDownRow,
  type ProcessProfile,
  type ProfiledRow,
  printProfiles,
  printRedisBreakdown,
  printSyscalls,
  printThreads,
} from "./blackbox-breakdown.js";
import type { Ceiling } from "./ceiling.js";
import type { Syscalls } from "./product.js";
import type { Transport } from "./receivers.js";
import type { RedisBreakdown } from "./redis-breakdown.js";
import { type Chain, printChain } from "./redis-timeline.js";
import { machine } from "./setup.js";
import type { Summary } from "./stats.js";
import { fmt, pct, printTable } from "./table.js";
import { type WakeFloor, wakeFloorCells, wakeFloorLine } from "./wake-floor.js";

export type Configuration = "start" | "split";
/** off: the product without OTEL_* variables; on: exporting to the bench's OTLP receiver */
export type Tracing = "off" | "on";
export const SINGLE_IN_FLIGHT = 64;
export const BATCH = 100;
export const BATCH_IN_FLIGHT = 4;

export interface BlackboxOptions {
  events: number;
  singles: number;
  warmup: number;
  partitions: number;
  ceilingSeconds: number;
  configs: Configuration[];
  tracing: Tracing[];
  /** Redis's own time per command and script of each throughput row (SLOWLOG of every command) */
  breakdown: boolean;
  /** the row whose event phase the product processes' CPU profiles are summarized over (--cpu-prof) */
  profile: ProfiledRow | undefined;
  /** µs between the profiles' samples */
  profileInterval: number;
  /** Node options given to every product process (before the CLI), e.g. a GC flag to compare */
  nodeArgs: string[];
  /** the CLI to run (`--bin`: another checkout's packages/server/bin/rendezvous.js, to compare revisions) */
  bin?: string;
  /** the Node binary of the product processes (`--node`: another major, to compare runtimes); the driver stays on its own */
  node?: string;
  /** one more BullMQ one-at-a-time row per configuration, under MONITOR: the chain in µs (redis-timeline.ts) */
  timeline: boolean;
}

export interface ThroughputRow {
  config: Configuration;
  tracing: Tracing;
  producers: "single" | "batch";
  transport: Transport;
  events: number;
  seconds: number;
  eventsPerSec: number;
  ofCeiling: number;
  /** µs of CPU (user + sys) per resolved event */
  cpu: { product: number; redis: number; sum: number; byProcess: Record<string, number>; driver: number };
  /** CPU ms per second of the same processes idle, over the second before the events */
  idle: { product: number; redis: number };
  /** the event phase, CLOCK_MONOTONIC µs (a CPU profile's clock) */
  phase: { fromUs: number; toUs: number };
  /** over the event phase, each process's main thread (redis too): CPU s (/proc stat), s on CPU and s runnable but waiting (schedstat) */
  mainThreads: Record<string, { cpuS: number; runS: number; waitS: number }>;
  /** over the event phase, CPU s of each process's threads by thread name (`main` = the main thread) */
  byThread: Record<string, Record<string, number>>;
  /** over the event phase, each process's read and write system calls (redis too) */
  syscalls: Record<string, Syscalls>;
  /** with --breakdown: Redis's own time over the event phase */
  redisBreakdown?: RedisBreakdown;
}

/**
 * The hops of one event at a time, from the times a BullMQ continuation carries (whole
 * ms on the product's side, so each hop's mean is the figure; see bench/lib/receivers.ts):
 * answer = send → 202 (in the driver); accept = send → the stream entry's time; match =
 * accepted → the resolution's time; dispatch = matched → the job created; wake = job
 * created → moved to active by the host's Worker; invoke = active → processor invoked.
 */
export const HOP_NAMES = ["answer", "accept", "match", "dispatch", "wake", "invoke"] as const;
export type HopName = (typeof HOP_NAMES)[number];

export interface LatencyRow {
  config: Configuration;
  tracing: Tracing;
  transport: Transport;
  latency: Summary;
  /** per hop (BullMQ worker only) */
  hops?: Partial<Record<HopName, Summary>>;
  /** CPU µs per event over the row (user + sys of the product processes and redis-server; idle work included) */
  cpu?: { product: number; redis: number; byProcess?: Record<string, number> };
  /** the row's phase, CLOCK_MONOTONIC µs, and its processes' threads over it (as a throughput row's) */
  phase?: ThroughputRow["phase"];
  mainThreads?: ThroughputRow["mainThreads"];
  byThread?: ThroughputRow["byThread"];
}

export interface BlackboxResult {
  opts: BlackboxOptions;
  /** what the CLI ran: the built JavaScript (npm run build) or the TypeScript sources through tsx */
  product: "dist" | "sources";
  /** the driver's Node version */
  node: string;
  /** the product processes' Node version (`--node`; else the driver's) */
  productNode: string;
  redis: string;
  cores: number;
  clkTck: number;
  loadStart: string;
  loadEnd: string;
  ceiling: Ceiling;
  /** the machine's round trip from idle, measured before the product starts */
  wakeFloor: WakeFloor;
  throughput: ThroughputRow[];
  latency: LatencyRow[];
  /** what the OTLP receiver got from each configuration run with tracing on */
  spans: SpanCount[];
  /** with --profile: each product process's self time over the chosen row's event phase */
  profiles?: ProcessProfile[];
  /** with --timeline: each configuration's one-at-a-time chain as Redis saw it */
  chains?: Chain[];
}

/** The OTLP receiver's counts over one configuration's run with tracing on (read after its processes stopped). */
export interface SpanCount {
  config: Configuration;
  spans: number;
  requests: number;
  bytes: number;
  unparsed: number;
  /** events (and as many waits) the configuration was sent, warm-ups included */
  events: number;
}

const producersLabel = (r: ThroughputRow) =>
  r.producers === "single"
    ? `1 per request, ${SINGLE_IN_FLIGHT} in flight`
    : `batches of ${BATCH}, ${BATCH_IN_FLIGHT} in flight`;

const worker = (t: Transport) => (t === "bullmq" ? "BullMQ Worker" : "HTTP claim");

/** on against off in percent, one decimal ("+0.0 %" when equal at that precision) */
function change(off: number, on: number): string {
  if (!(off > 0)) return "";
  const p = ((on - off) / off) * 100;
  const text = Math.abs(p).toFixed(1);
  return `${p < 0 && text !== "0.0" ? "-" : "+"}${text} %`;
}

/** Each row measured with tracing off, with its twin measured with tracing on (same config, producers, worker). */
export function tracingPairs(r: BlackboxResult): {
  throughput: Array<{ off: ThroughputRow; on: ThroughputRow }>;
  latency: Array<{ off: LatencyRow; on: LatencyRow }>;
} {
  const key = (t: { config: string; transport: string; producers?: string }) =>
    `${t.config}/${t.transport}/${t.producers ?? ""}`;
  const onT = new Map(r.throughput.filter((t) => t.tracing === "on").map((t) => [key(t), t]));
  const onL = new Map(r.latency.filter((l) => l.tracing === "on").map((l) => [key(l), l]));
  return {
    throughput: r.throughput
      .filter((t) => t.tracing === "off" && onT.has(key(t)))
      .map((off) => ({ off, on: onT.get(key(off)) as ThroughputRow })),
    latency: r.latency
      .filter((l) => l.tracing === "off" && onL.has(key(l)))
      .map((off) => ({ off, on: onL.get(key(off)) as LatencyRow })),
  };
}

export function printBlackbox(r: BlackboxResult): void {
  const opts = r.opts;
  console.log(`\nblack-box resolve path — ${new Date().toISOString()}; ${machine()}`);
  console.log(
    `Node ${r.productNode === r.node ? r.node : `${r.productNode} (the product; --node ${opts.node}), driver ${r.node}`}, Redis ${r.redis} (appendonly yes, appendfsync everysec), ${r.cores} cores, CLK_TCK ${r.clkTck}; ${opts.partitions} partitions; the CLI ran its ${r.product === "dist" ? "built JavaScript" : "TypeScript sources (tsx)"}${opts.nodeArgs.length > 0 ? ` with ${opts.nodeArgs.join(" ")}` : ""}${opts.bin ? `; --bin ${opts.bin}` : ""}${opts.timeline ? "; --timeline: one more one-at-a-time row under MONITOR" : ""}${opts.breakdown ? "; --breakdown: every Redis command logged during the event phases" : ""}${opts.profile ? `; --profile ${opts.profile}: the product processes under --cpu-prof (every ${opts.profileInterval} µs)` : ""}`,
  );
  console.log(`load average (1/5/15 min): ${r.loadStart} at start, ${r.loadEnd} at end`);
  console.log(
    `Redis ceiling (one client, 64 in flight, EVALSHA of HGET + HSET + XADD MAXLEN ~ + ZREM): ${fmt(r.ceiling.callsPerSec)} calls/s`,
  );
  printTable(
    `throughput: ${fmt(opts.events)} waits, then ${fmt(opts.events)} events (send → continuation received); CPU µs per resolved event`,
    [
      "config",
      "tracing",
      "producers",
      "worker",
      "events/s",
      "of ceiling",
      "product",
      "redis",
      "sum",
      "by process",
      "driver",
      "idle ms/s",
    ],
    r.throughput.map((t) => [
      t.config,
      t.tracing,
      producersLabel(t),
      worker(t.transport),
      t.eventsPerSec,
      pct(t.ofCeiling),
      Math.round(t.cpu.product),
      Math.round(t.cpu.redis),
      Math.round(t.cpu.sum),
      Object.keys(t.cpu.byProcess).length > 1
        ? Object.entries(t.cpu.byProcess)
            .map(([name, us]) => `${name} ${fmt(Math.round(us))}`)
            .join(" · ")
        : "",
      Math.round(t.cpu.driver),
      `${fmt(t.idle.product)} / ${fmt(t.idle.redis)}`,
    ]),
  );
  console.log(
    "product: every rendezvous process; redis: redis-server (both user + sys, event phase only); driver: this process (producers, host worker), not in the sum; idle ms/s: product / redis CPU over the idle second before the events",
  );
  printTable(
    `one at a time: ${fmt(opts.singles)} events, send → continuation received, ms`,
    ["config", "tracing", "worker", "p50", "p90", "p99", "max"],
    r.latency.map((l) => [
      l.config,
      l.tracing,
      worker(l.transport),
      fmt(l.latency.p50, 2),
      fmt(l.latency.p90, 2),
      fmt(l.latency.p99, 2),
      fmt(l.latency.max, 2),
    ]),
  );
  console.log(`the machine's floor: ${wakeFloorLine(r.wakeFloor)}`);
  const withHops = r.latency.filter((l) => l.hops && Object.keys(l.hops).length > 0);
  if (withHops.length > 0) {
    printTable(
      "one at a time, per hop (BullMQ worker), ms mean / p50 / p99: answer = send → 202; accept = send → stream entry time; match = → resolution time; dispatch = → job created; wake = → job active; invoke = → processor (product marks are whole ms: read the means)",
      ["config", "tracing", "CPU µs/event product + redis", ...HOP_NAMES],
      withHops.map((l) => [
        l.config,
        l.tracing,
        l.cpu ? `${fmt(Math.round(l.cpu.product))} + ${fmt(Math.round(l.cpu.redis))}` : "",
        ...HOP_NAMES.map((h) => {
          const s = l.hops?.[h];
          return s ? `${fmt(s.mean, 2)} / ${fmt(s.p50, 2)} / ${fmt(s.p99, 2)}` : "";
        }),
      ]),
    );
  }
  if (r.spans.length > 0) {
    printTable(
      "tracing on: what the bench's OTLP/HTTP receiver got (after the processes stopped)",
      ["config", "spans", "export requests", "bytes", "unparsed", "events sent", "spans per event"],
      r.spans.map((c) => [
        c.config,
        c.spans,
        c.requests,
        c.bytes,
        c.unparsed,
        c.events,
        c.events > 0 ? fmt(c.spans / c.events, 2) : "",
      ]),
    );
  }
  printBreakdowns(r);
  const pairs = tracingPairs(r);
  if (pairs.throughput.length + pairs.latency.length > 0) {
    printTable(
      "tracing off → on, side by side",
      ["config", "row", "off", "on", "change"],
      [
        ...pairs.throughput.flatMap(({ off, on }) => [
          [
            off.config,
            `${producersLabel(off)} → ${worker(off.transport)}, events/s`,
            off.eventsPerSec,
            on.eventsPerSec,
            change(off.eventsPerSec, on.eventsPerSec),
          ],
          [
            off.config,
            "  CPU µs per event (product + Redis)",
            Math.round(off.cpu.sum),
            Math.round(on.cpu.sum),
            change(off.cpu.sum, on.cpu.sum),
          ],
        ]),
        ...pairs.latency.map(({ off, on }) => [
          off.config,
          `one at a time → ${worker(off.transport)}, p50 / p99 ms`,
          `${fmt(off.latency.p50, 2)} / ${fmt(off.latency.p99, 2)}`,
          `${fmt(on.latency.p50, 2)} / ${fmt(on.latency.p99, 2)}`,
          change(off.latency.p50, on.latency.p50),
        ]),
      ],
    );
  }
}

/** With --breakdown and --profile: where the CPU of each row goes, per process and step. */
function printBreakdowns(r: BlackboxResult): void {
  for (const t of r.throughput) {
    if (!t.redisBreakdown) continue;
    const row: BrokenDownRow = {
      label: `${t.config}${t.tracing === "on" ? " (tracing on)" : ""}, ${producersLabel(t)} → ${worker(t.transport)}`,
      events: t.events,
      redisCpu: t.cpu.redis,
      redisMain: t.mainThreads.redis ?? { cpuS: 0, runS: 0, waitS: 0 },
      breakdown: t.redisBreakdown,
    };
    printRedisBreakdown(row);
  }
  printSyscalls(r.throughput);
  if (r.opts.breakdown || r.opts.profile) printThreads(r.throughput);
  if (r.profiles && r.profiles.length > 0) printProfiles(r.profiles);
  for (const c of r.chains ?? []) printChain(c);
}

export interface BenchRow {
  metric: string;
  value: string;
  ceiling: string;
  target: string;
  verdict: string;
}

/**
 * The rows `npm run bench` prints: each throughput with its CPU per event, each latency;
 * issue 21's targets on `rendezvous start` with the BullMQ Worker (the split roles beside).
 */
export function blackboxRows(r: BlackboxResult): BenchRow[] {
  const verdict = (ok: boolean) => (ok ? "PASS" : "MISS");
  // (a product run on another Node than the driver's says so on its first row)
  const runtime = r.productNode !== r.node ? `; the product on Node ${r.productNode}` : "";
  const rows: BenchRow[] = [
    {
      metric: `Redis ceiling: EVALSHA of HGET + HSET + XADD + ZREM, 64 in flight, calls/s${runtime}`,
      value: fmt(r.ceiling.callsPerSec),
      ceiling: "100 %",
      target: `load ${r.loadStart} → ${r.loadEnd}`,
      verdict: "",
    },
  ];
  const both = new Set(r.throughput.map((t) => t.tracing)).size > 1;
  const mode = (t: { tracing: Tracing }) => (both ? `, tracing ${t.tracing}` : "");
  for (const t of r.throughput) {
    // issue 21's targets hold for the default deployment: tracing off
    const judged = t.config === "start" && t.transport === "bullmq" && t.tracing === "off";
    const single = t.producers === "single";
    const cpuTarget = single ? 300 : 200;
    rows.push({
      metric: `${t.config}${mode(t)}, ${producersLabel(t)} → ${worker(t.transport)}, events/s (${fmt(t.events)} events)`,
      value: fmt(t.eventsPerSec),
      ceiling: pct(t.ofCeiling),
      target: judged && single ? "≥ 5 % of the ceiling" : "",
      verdict: judged && single ? verdict(t.ofCeiling >= 0.05) : "",
    });
    rows.push({
      metric: "  CPU µs per resolved event, product + Redis = sum",
      value: `${fmt(Math.round(t.cpu.product))} + ${fmt(Math.round(t.cpu.redis))} = ${fmt(Math.round(t.cpu.sum))}`,
      ceiling: "",
      target: judged ? `≤ ${cpuTarget} µs` : "",
      verdict: judged ? verdict(t.cpu.sum <= cpuTarget) : "",
    });
  }
  for (const l of r.latency) {
    const judged = l.config === "start" && l.transport === "bullmq" && l.tracing === "off";
    rows.push({
      metric: `${l.config}${mode(l)}, one at a time → ${worker(l.transport)}: send → received p50 / p99 ms (${fmt(l.latency.count)})`,
      value: `${fmt(l.latency.p50, 2)} / ${fmt(l.latency.p99, 2)}`,
      ceiling: "",
      target: judged ? "p50 ≤ 1.5, p99 ≤ 5" : "",
      verdict: judged ? verdict(l.latency.p50 <= 1.5 && l.latency.p99 <= 5) : "",
    });
  }
  rows.push({ ...wakeFloorCells(r.wakeFloor), ceiling: "", verdict: "" });
  const pairs = tracingPairs(r);
  for (const { off, on } of pairs.throughput) {
    rows.push({
      metric: `${off.config}, tracing off → on, ${producersLabel(off)} → ${worker(off.transport)}: events/s; CPU µs per event`,
      value: `${fmt(off.eventsPerSec)} → ${fmt(on.eventsPerSec)}; ${fmt(Math.round(off.cpu.sum))} → ${fmt(Math.round(on.cpu.sum))}`,
      ceiling: "",
      target: `${change(off.eventsPerSec, on.eventsPerSec)}; ${change(off.cpu.sum, on.cpu.sum)}`,
      verdict: "",
    });
  }
  for (const c of r.spans) {
    rows.push({
      metric: `${c.config}, tracing on: spans received by the bench's OTLP receiver (${fmt(c.requests)} exports)`,
      value: fmt(c.spans),
      ceiling: "",
      target: c.events > 0 ? `${fmt(c.spans / c.events, 2)} per event sent` : "",
      verdict: "",
    });
  }
  return rows;
}
