/**
 * What the black-box benchmark (bench/suites/blackbox.ts) measures, its tables, and
 * its rows in `npm run bench` (bench/suites/all.ts) with the targets of issue 21.
 */
import type { Ceiling } from "./ceiling.js";
import type { Transport } from "./receivers.js";
import { machine } from "./setup.js";
import type { Summary } from "./stats.js";
import { fmt, pct, printTable } from "./table.js";

export type Configuration = "start" | "split";
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
}

export interface ThroughputRow {
  config: Configuration;
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
}

export interface LatencyRow {
  config: Configuration;
  transport: Transport;
  latency: Summary;
}

export interface BlackboxResult {
  opts: BlackboxOptions;
  /** what the CLI ran: the built JavaScript (npm run build) or the TypeScript sources through tsx */
  product: "dist" | "sources";
  node: string;
  redis: string;
  cores: number;
  clkTck: number;
  loadStart: string;
  loadEnd: string;
  ceiling: Ceiling;
  throughput: ThroughputRow[];
  latency: LatencyRow[];
}

const producersLabel = (r: ThroughputRow) =>
  r.producers === "single"
    ? `1 per request, ${SINGLE_IN_FLIGHT} in flight`
    : `batches of ${BATCH}, ${BATCH_IN_FLIGHT} in flight`;

const worker = (t: Transport) => (t === "bullmq" ? "BullMQ Worker" : "HTTP claim");

export function printBlackbox(r: BlackboxResult): void {
  const opts = r.opts;
  console.log(`\nblack-box resolve path — ${new Date().toISOString()}; ${machine()}`);
  console.log(
    `Node ${r.node}, Redis ${r.redis} (appendonly yes, appendfsync everysec), ${r.cores} cores, CLK_TCK ${r.clkTck}; ${opts.partitions} partitions; the CLI ran its ${r.product === "dist" ? "built JavaScript" : "TypeScript sources (tsx)"}`,
  );
  console.log(`load average (1/5/15 min): ${r.loadStart} at start, ${r.loadEnd} at end`);
  console.log(
    `Redis ceiling (one client, 64 in flight, EVALSHA of HGET + HSET + XADD MAXLEN ~ + ZREM): ${fmt(r.ceiling.callsPerSec)} calls/s`,
  );
  printTable(
    `throughput: ${fmt(opts.events)} waits, then ${fmt(opts.events)} events (send → continuation received); CPU µs per resolved event`,
    [
      "config",
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
    ["config", "worker", "p50", "p90", "p99", "max"],
    r.latency.map((l) => [
      l.config,
      worker(l.transport),
      fmt(l.latency.p50, 2),
      fmt(l.latency.p90, 2),
      fmt(l.latency.p99, 2),
      fmt(l.latency.max, 2),
    ]),
  );
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
  const rows: BenchRow[] = [
    {
      metric: "Redis ceiling: EVALSHA of HGET + HSET + XADD + ZREM, 64 in flight, calls/s",
      value: fmt(r.ceiling.callsPerSec),
      ceiling: "100 %",
      target: `load ${r.loadStart} → ${r.loadEnd}`,
      verdict: "",
    },
  ];
  for (const t of r.throughput) {
    const judged = t.config === "start" && t.transport === "bullmq";
    const single = t.producers === "single";
    const cpuTarget = single ? 300 : 200;
    rows.push({
      metric: `${t.config}, ${producersLabel(t)} → ${worker(t.transport)}, events/s (${fmt(t.events)} events)`,
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
    const judged = l.config === "start" && l.transport === "bullmq";
    rows.push({
      metric: `${l.config}, one at a time → ${worker(l.transport)}: send → received p50 / p99 ms (${fmt(l.latency.count)})`,
      value: `${fmt(l.latency.p50, 2)} / ${fmt(l.latency.p99, 2)}`,
      ceiling: "",
      target: judged ? "p50 ≤ 1.5, p99 ≤ 5" : "",
      verdict: judged ? verdict(l.latency.p50 <= 1.5 && l.latency.p99 <= 5) : "",
    });
  }
  return rows;
}
