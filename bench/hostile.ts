/**
 * bench:hostile — a legitimate client's latency during each hostile-client case
 * (packages/server/test/hostile/): the cases run as they do in `npm test` (real api
 * processes, the attacker on 127.0.0.2), and for each the same legitimate traffic is
 * first timed for 1.5 s without the attack, so the p99 under attack stands next to the
 * unloaded p99 of the same run. Prints one table and the load average.
 *
 * Usage: npm run bench:hostile [-- --only <substring of a file name>]
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "./lib/args.js";
import { printTable } from "./lib/table.js";

interface CaseLine {
  case: string;
  requests: number;
  failures: number;
  baselineP99Ms?: number;
  p99Ms: number;
  rssGrowthMiB: number;
}

const root = fileURLToPath(new URL("..", import.meta.url));
const only = parseArgs().string("only", "");
const dir = mkdtempSync(join(tmpdir(), "rdv-bench-hostile-"));
const reportFile = join(dir, "cases.jsonl");
const load = (l: number[]) => l.map((x) => x.toFixed(2)).join(" ");
const before = loadavg();
const run = spawnSync(
  process.execPath,
  [join(root, "node_modules/vitest/vitest.mjs"), "run", "--project", "hostile", ...(only ? [only] : [])],
  {
    cwd: root,
    stdio: ["ignore", "inherit", "inherit"],
    env: { ...process.env, RENDEZVOUS_HOSTILE_REPORT: reportFile },
  },
);
const after = loadavg();
let lines: CaseLine[] = [];
try {
  lines = readFileSync(reportFile, "utf8")
    .trim()
    .split("\n")
    .filter(Boolean)
    .map((l) => JSON.parse(l) as CaseLine);
} catch {
  // no case reported: the table says so
}
rmSync(dir, { recursive: true, force: true });

const ms = (v: number | undefined) => (v === undefined ? "—" : v.toFixed(1));
printTable(
  "a legitimate client during each hostile case (same run)",
  ["hostile case", "legit requests", "failed", "p99 unloaded ms", "p99 under attack ms", "ratio", "RSS growth MiB"],
  lines.map((l) => [
    l.case,
    String(l.requests),
    String(l.failures),
    ms(l.baselineP99Ms),
    ms(l.p99Ms),
    l.baselineP99Ms ? `${(l.p99Ms / l.baselineP99Ms).toFixed(2)}×` : "—",
    l.rssGrowthMiB.toFixed(1),
  ]),
);
process.stdout.write(`\nload average before ${load(before)}, after ${load(after)} (1, 5, 15 min)\n`);
if (run.status !== 0) {
  process.stdout.write(`the hostile cases exited ${run.status}: a bound did not hold (see above)\n`);
  process.exitCode = 1;
}
