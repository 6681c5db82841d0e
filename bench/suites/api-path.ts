/**
 * bench:api-path — the api's CPU per event on the producer path, alone: `rendezvous api`
 * processes (this checkout's, and with `--base <dir>` another checkout's) against one private
 * redis-server, and a bare fastify server (the floor: Node's HTTP and fastify with nothing of
 * the product), each driven over keep-alive connections in turn:
 *
 * - `single@1`: one `POST /v1/events` at a time;
 * - `single@64`: 64 in flight (the ingest gathers them behind its Store call in flight);
 * - `batch100@4`: `POST /v1/events/batch` of 100 events, 4 in flight (per event).
 *
 * CPU is the driven process's user + system time over the scenario, every thread, read from
 * /proc/<pid>/task/<tid>/schedstat (ns) — the other processes are idle meanwhile; redis-server's
 * is read the same way. Rounds alternate the order of the processes (round 2 runs them in reverse),
 * and each cell is the median of the rounds. `--profile` then runs this checkout's api under
 * `node --cpu-prof` for one `single@64` scenario and prints the top frames by self time (the
 * samples of that scenario only) and their areas.
 *
 * Flags: --requests N (single@64 requests and batch events per round; single@1 runs a quarter;
 * default 10000, --quick 2000), --rounds R (default 2), --warmup N (default 3000),
 * --base <checkout dir> (its packages/server/bin/rendezvous.js), --profile, --top N (25), --json.
 */
import { spawn } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { summarizeProfile } from "../lib/api-profile.js";
import { parseArgs } from "../lib/args.js";
import { type Poster, poster } from "../lib/http-post.js";
import { runPool } from "../lib/pool.js";
import { ready, startRole } from "../lib/product.js";
import { startBenchRedis } from "../lib/redis.js";
import { load, machine, saveResults } from "../lib/setup.js";
import { pct, printTable, progress } from "../lib/table.js";

const TENANT = "acme";
const KEY = "pk_api_path_bench";
const HEADERS = { authorization: `Bearer ${KEY}`, "rendezvous-producer": `${TENANT}/svc` };

interface Target {
  name: string;
  pid: number;
  url: string;
  /** the floor serves single events only */
  batches: boolean;
  stop(): Promise<void>;
}

interface Scenario {
  name: string;
  /** events per request */
  batch: number;
  inFlight: number;
  /** share of --requests it sends */
  share: number;
}

const SCENARIOS: Scenario[] = [
  { name: "single@1", batch: 1, inFlight: 1, share: 0.25 },
  { name: "single@64", batch: 1, inFlight: 64, share: 1 },
  { name: "batch100@4", batch: 100, inFlight: 4, share: 1 },
];

/** ns on a CPU of every thread of `pid` (schedstat's first field); stat's ticks where schedstat is missing. */
export function cpuNs(pid: number): number {
  let total = 0;
  try {
    for (const tid of readdirSync(`/proc/${pid}/task`)) {
      total += Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, "utf8").split(" ")[0]);
    }
    return total;
  } catch {
    const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]?.split(" ") ?? [];
    return (Number(fields[11]) + Number(fields[12])) * 1e7;
  }
}

let sequence = 0;
const eventOf = (tag: string, i: number) => ({
  id: `${tag}-${i}`,
  type: "bench.event",
  correlationId: `c-${tag}-${i % 1000}`,
  payload: { amount: i },
});

/** Sends `events` events in `scenario`'s shape; every id is new (every event accepted). */
async function drive(http: Poster, scenario: Scenario, events: number): Promise<void> {
  const tag = `r${process.pid}x${++sequence}`;
  if (scenario.batch === 1) {
    await runPool(events, scenario.inFlight, async (i) => {
      await http.post("/v1/events", HEADERS, eventOf(tag, i), 202);
    });
    return;
  }
  const b = scenario.batch;
  await runPool(Math.ceil(events / b), scenario.inFlight, async (r) => {
    const batch = Array.from({ length: Math.min(b, events - r * b) }, (_, j) => eventOf(tag, r * b + j));
    await http.post("/v1/events/batch", HEADERS, { events: batch }, 200);
  });
}

/** µs of the target and of redis-server per event while `scenario` sends `events`. */
async function measure(t: Target, redisPid: number, scenario: Scenario, events: number) {
  const http = poster(t.url, scenario.inFlight);
  try {
    await drive(http, scenario, Math.min(events, 500)); // connections open, caches warm
    const a0 = cpuNs(t.pid);
    const r0 = cpuNs(redisPid);
    await drive(http, scenario, events);
    return { apiUs: (cpuNs(t.pid) - a0) / 1e3 / events, redisUs: (cpuNs(redisPid) - r0) / 1e3 / events };
  } finally {
    http.close();
  }
}

function startFloor(): Target & { ready: Promise<string> } {
  const script = fileURLToPath(new URL("../lib/floor-server.ts", import.meta.url));
  const child = spawn(process.execPath, ["--max-semi-space-size=64", "--import", "tsx", script], {
    stdio: ["ignore", "pipe", "inherit"],
  });
  process.once("exit", () => child.kill("SIGKILL"));
  const url = new Promise<string>((resolve, reject) => {
    let out = "";
    child.stdout?.on("data", (d: Buffer) => {
      out += d.toString();
      const m = /listening on (http:\S+?)"/.exec(out);
      if (m) resolve(m[1] as string);
    });
    child.once("exit", (code) => reject(new Error(`the floor server exited (${code})`)));
  });
  const target = {
    name: "floor (bare fastify)",
    pid: child.pid as number,
    url: "",
    batches: false,
    async stop() {
      const exited = new Promise((r) => child.once("exit", r));
      child.kill("SIGTERM");
      await exited;
    },
  };
  return Object.assign(target, { ready: url });
}

export async function main(): Promise<void> {
  const args = parseArgs();
  const quick = args.flag("quick");
  const requests = args.number("requests", quick ? 2000 : 10_000);
  const rounds = args.number("rounds", 2);
  const warmup = args.number("warmup", quick ? 1000 : 3000);
  const base = args.string("base", "");
  const top = args.number("top", 25);
  const redis = await startBenchRedis(30 * 60_000);
  const redisPid = redis.pid;
  const dir = mkdtempSync(join(tmpdir(), "rdv-api-path-"));
  const configFile = join(dir, "config.json");
  writeFileSync(
    configFile,
    JSON.stringify({ tenants: { [TENANT]: { producers: { svc: { keys: [KEY], eventTypes: ["bench.*"] } } } } }),
  );
  // (LOG_LEVEL info, as startRole sets it: its "listening on" line gives the URL)
  const env: Record<string, string | undefined> = {};
  for (const k of Object.keys(process.env)) if (k.startsWith("OTEL_")) env[k] = undefined;
  const api = async (name: string, bin: string | undefined, nodeArgs: string[] = []): Promise<Target> => {
    const prefix = `ap${name.replace(/\W/g, "")}${Date.now().toString(36)}`;
    const role = startRole("api", { redisUrl: redis.url, configFile, prefix, env, bin, nodeArgs });
    const url = await role.url;
    await ready(url);
    return { name, pid: role.pid, url, batches: true, stop: () => role.stop() };
  };
  const targets: Target[] = [];
  const results: Record<string, Record<string, { apiUs: number[]; redisUs: number[] }>> = {};
  try {
    targets.push(await api("head", undefined));
    if (base) targets.push(await api("base", join(base, "packages/server/bin/rendezvous.js")));
    const floor = startFloor();
    floor.url = await floor.ready;
    targets.push(floor);
    progress(`load ${load()}; ${targets.map((t) => `${t.name} pid ${t.pid}`).join(", ")}; warm-up`);
    for (const t of targets) {
      for (const s of SCENARIOS) if (t.batches || s.batch === 1) await measure(t, redisPid, s, warmup);
    }
    for (let round = 0; round < rounds; round++) {
      const order = round % 2 === 0 ? targets : [...targets].reverse();
      for (const s of SCENARIOS) {
        for (const t of order) {
          if (!t.batches && s.batch > 1) continue;
          const m = await measure(t, redisPid, s, Math.round(requests * s.share));
          const byTarget = results[s.name] ?? {};
          results[s.name] = byTarget;
          const cell = byTarget[t.name] ?? { apiUs: [], redisUs: [] };
          byTarget[t.name] = cell;
          cell.apiUs.push(m.apiUs);
          cell.redisUs.push(m.redisUs);
          progress(
            `round ${round + 1} ${s.name} ${t.name}: api ${m.apiUs.toFixed(1)} µs, redis ${m.redisUs.toFixed(1)} µs`,
          );
        }
      }
    }
  } finally {
    await Promise.all(targets.map((t) => t.stop()));
  }
  const median = (xs: number[]) => {
    const s = [...xs].sort((a, b) => a - b);
    return s.length % 2
      ? (s[(s.length - 1) / 2] as number)
      : ((s[s.length / 2 - 1] as number) + (s[s.length / 2] as number)) / 2;
  };
  const rows = Object.entries(results).flatMap(([scenario, byTarget]) =>
    Object.entries(byTarget).map(([target, c]) => [
      scenario,
      target,
      median(c.apiUs),
      c.apiUs.map((u) => u.toFixed(1)).join(" / "),
      target.startsWith("floor") ? "—" : median(c.redisUs),
    ]),
  );
  console.log(
    `\nbench:api-path — ${machine()}; load average ${load()}; ${requests} requests per round, ${rounds} rounds`,
  );
  printTable(
    "CPU µs per event (median of rounds; each round's value)",
    ["scenario", "process", "api µs", "rounds", "redis µs"],
    rows,
  );

  let profile: ReturnType<typeof summarizeProfile> | undefined;
  if (args.flag("profile")) {
    const profDir = mkdtempSync(join(tmpdir(), "rdv-api-prof-"));
    const t = await api("head-profiled", undefined, ["--cpu-prof", `--cpu-prof-dir=${profDir}`]);
    const single = SCENARIOS[1] as Scenario;
    await measure(t, redisPid, single, warmup);
    const from = process.hrtime.bigint() / 1000n;
    await measure(t, redisPid, single, requests);
    const to = process.hrtime.bigint() / 1000n;
    await t.stop();
    const file = readdirSync(profDir).find((f) => f.endsWith(".cpuprofile"));
    if (!file) throw new Error(`no profile written in ${profDir}`);
    profile = summarizeProfile(join(profDir, file), { fromUs: Number(from), toUs: Number(to) });
    printTable(
      `api profile, single@64 (${join(profDir, file)}): self time by area, busy time only`,
      ["area", "share"],
      profile.areas.map(([a, s]) => [a, pct(s)]),
    );
    printTable(
      `top ${top} frames by self time`,
      ["frame", "area", "share"],
      profile.frames.slice(0, top).map((f) => [f.frame, f.area, pct(f.share)]),
    );
  }
  await redis.stop();
  rmSync(dir, { recursive: true, force: true });
  const saved = saveResults("api-path", { machine: machine(), load: load(), requests, rounds, results, profile });
  progress(`results: ${saved}`);
  if (args.flag("json")) console.log(`API_PATH_JSON ${JSON.stringify({ results, profile })}`);
}
