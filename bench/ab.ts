/**
 * Two variants of the black box, run in interleaved pairs (not a test):
 * `npm run bench:ab -- --b="--node /path/to/node24" [--a="…"] [--pairs 5] [--common="…"]`
 * (the `=` form: a variant starts with `--`).
 *
 * This VM's speed moves by a third between runs minutes apart (docs/performance.md), so a
 * single pair cannot show a change of a tenth. Each pair runs `bench:blackbox` with the
 * common arguments plus A's, and plus B's (the order alternates: AB, BA, AB, …, so a drift
 * during a pair falls on each variant alike), and the table gives each row's median for A
 * and for B and the median, lowest and highest of the pairs' B / A ratios. A variant is
 * whatever the black box takes: another product tree (`--bin`), another Node (`--node`),
 * Node flags (`--node-args`), partitions.
 */
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { parseArgs } from "./lib/args.js";
import { median } from "./lib/stats.js";
import { printTable } from "./lib/table.js";

const args = parseArgs();
const PAIRS = args.number("pairs", 5);
const COMMON = args.string("common", "--configs start --events 5000 --singles 300 --tracing off --ceiling-seconds 2");
const A = args.string("a", "");
const B = args.string("b", "");
if (A === B) throw new Error("--a and --b are the same variant");

const words = (s: string) => s.split(/\s+/).filter(Boolean);

/** One black-box run: the path of its results file. */
function run(variant: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn("npx", ["tsx", "bench/blackbox.ts", ...words(COMMON), ...words(variant)], {
      stdio: ["ignore", "pipe", "pipe"],
    });
    // (the run's progress lines, the results file's among them, are on stderr)
    let out = "";
    const take = (d: Buffer) => {
      out += d.toString();
    };
    child.stdout.on("data", take);
    child.stderr.on("data", take);
    child.on("error", reject);
    child.on("exit", (code) => {
      const path = /results written to (\S+\.json)/.exec(out)?.[1];
      if (code === 0 && path) resolve(path);
      else reject(new Error(`bench:blackbox ${variant} exited ${code}:\n${out.slice(-2000)}`));
    });
  });
}

interface Throughput {
  config: string;
  producers: string;
  transport: string;
  eventsPerSec: number;
  cpu: { product: number; redis: number; sum: number };
}
interface Latency {
  config: string;
  transport: string;
  latency: { p50: number; p99: number };
}
interface Results {
  ceiling: { callsPerSec: number };
  throughput: Throughput[];
  latency: Latency[];
}

/** The rows compared, by name: each run's value. */
function rowsOf(r: Results): Map<string, number> {
  const rows = new Map<string, number>();
  for (const t of r.throughput) {
    const name = `${t.config} ${t.producers} ${t.transport}`;
    rows.set(`${name}: product µs/event`, t.cpu.product);
    rows.set(`${name}: redis µs/event`, t.cpu.redis);
    rows.set(`${name}: product + redis µs/event`, t.cpu.sum);
    rows.set(`${name}: events/s`, t.eventsPerSec);
  }
  for (const l of r.latency) {
    rows.set(`${l.config} one at a time ${l.transport}: p50 ms`, l.latency.p50);
    rows.set(`${l.config} one at a time ${l.transport}: p99 ms`, l.latency.p99);
  }
  rows.set("Redis ceiling calls/s", r.ceiling.callsPerSec);
  return rows;
}

const runs: Array<{ a: Map<string, number>; b: Map<string, number> }> = [];
for (let i = 0; i < PAIRS; i++) {
  const first = i % 2 === 0 ? "a" : "b";
  const results: Record<string, Map<string, number>> = {};
  for (const v of first === "a" ? ["a", "b"] : ["b", "a"]) {
    const path = await run(v === "a" ? A : B);
    results[v] = rowsOf(JSON.parse(readFileSync(path, "utf8")) as Results);
    process.stderr.write(`pair ${i + 1}/${PAIRS}: ${v} done (${path})\n`);
  }
  runs.push({ a: results.a as Map<string, number>, b: results.b as Map<string, number> });
}

const fmt = (n: number) => (Math.abs(n) >= 100 ? Math.round(n).toLocaleString("en-US") : n.toFixed(2));
const names = [...(runs[0]?.a.keys() ?? [])];
printTable(
  `bench:ab — ${PAIRS} pairs, common: ${COMMON}; A: ${A || "(nothing more)"}; B: ${B || "(nothing more)"}`,
  ["row", "A median", "B median", "B / A median", "lowest", "highest"],
  names.map((name) => {
    const as = runs.map((r) => r.a.get(name) ?? Number.NaN);
    const bs = runs.map((r) => r.b.get(name) ?? Number.NaN);
    const ratios = runs.map((_, i) => (bs[i] as number) / (as[i] as number));
    return [
      name,
      fmt(median(as)),
      fmt(median(bs)),
      median(ratios).toFixed(3),
      Math.min(...ratios).toFixed(3),
      Math.max(...ratios).toFixed(3),
    ];
  }),
);
