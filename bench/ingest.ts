/**
 * Ingest throughput (not a test). `npm run bench:ingest [-- --quick] [-- --seconds N]`
 *
 * - starts its own redis-server (free loopback port, AOF everysec; never 6379); every
 *   scenario, the raw ceiling included, starts from an empty dataset and a rewritten AOF,
 *   with automatic AOF rewrites off (a rewrite takes a core for seconds: see `fresh`);
 * - starts the API in this process: fastify + ingestRoutes on a free loopback port;
 * - the raw ceiling: pipelined XADD (1,000 per round trip) from one ioredis client,
 *   each entry carrying the same bytes as one event body;
 * - producer load from a child process (so the client's CPU is not the API's):
 *   single-event requests (64 in flight; bearer key, and signed) and batches of 100
 *   and 500 events; every event id is new, so every event is accepted (appended);
 * - prints events/s per scenario and its ratio to raw XADD.
 *
 * Flags: --quick (1 s per scenario), --seconds N, --warmup N (unmeasured seconds before each
 * scenario, default 3), --only <text> (scenarios whose name has it), --pairs N (after the
 * table, N rounds of the raw ceiling and batch 500 back to back; the median round's ratio
 * is the headline; default 3, 0 with --quick),
 * --default-heap (the API without the launchers' --max-semi-space-size=64),
 * --commandstats (after each load scenario, Redis time per event by command, from INFO
 * commandstats: scripts include the commands they call), --no-baselines (skip raw XADD and store.ingest direct: to profile the HTTP path alone
 * with `node --cpu-prof --import tsx bench/ingest.ts --no-baselines --only batch`).
 * Results are written down in docs/ingest.md.
 */
import { spawn, spawnSync } from "node:child_process";
import { createHmac } from "node:crypto";
import { Agent, request } from "node:http";
import { cpus, loadavg } from "node:os";
import { fileURLToPath } from "node:url";

const SOURCE_CONDITION = "--conditions=@rendezvous/source";
/** As packages/server/bin/rendezvous.js, `npm start` and the Dockerfile start the API. */
const YOUNG_GENERATION = "--max-semi-space-size=64";
const self = fileURLToPath(import.meta.url);
const argv = process.argv.slice(2);

interface LoadSpec {
  url: string;
  mode: "single" | "batch";
  batchSize: number;
  inFlight: number;
  warmupSec: number;
  seconds: number;
  auth: "key" | "signature";
  runId: string;
}

interface LoadResult {
  accepted: number;
  /** accepted over the whole run, warm-up included (for CPU per event) */
  acceptedTotal: number;
  requests: number;
  failures: Record<string, number>;
  seconds: number;
  p50Ms: number | null;
  p99Ms: number | null;
  /** CPU of the load child per accepted event, µs (bodies are built before the clock starts) */
  childUs: number;
}

const KEY = "pk_bench";
const SECRET = "whsec_bench";
const NOTE = "n".repeat(120);

/** One event body; the same shape (and about the same size) everywhere. */
function eventJson(runId: string, n: number): string {
  return `{"id":"${runId}-${n}","type":"bench.event","correlationId":"c-${n % 10_000}","payload":{"amount":${n},"note":"${NOTE}"}}`;
}

// ------------------------------------------------------------------ load child

async function runLoad(spec: LoadSpec): Promise<LoadResult> {
  const agent = new Agent({ keepAlive: true, maxSockets: spec.inFlight });
  const target = new URL(spec.mode === "single" ? "/v1/events" : "/v1/events/batch", spec.url);
  const latencies: number[] = [];
  const failures: Record<string, number> = {};
  let accepted = 0;
  let acceptedTotal = 0;
  let requests = 0;
  let counting = false;
  let stop = false;
  let seq = 0;

  // bodies are bytes, ready to sign and write (no encoding per request)
  const build = (): Buffer => {
    if (spec.mode === "single") return Buffer.from(eventJson(spec.runId, seq++));
    const parts: string[] = [];
    for (let i = 0; i < spec.batchSize; i++) parts.push(eventJson(spec.runId, seq++));
    return Buffer.from(`{"events":[${parts.join(",")}]}`);
  };
  // Producers run elsewhere in a deployment: build the bodies before the clock starts
  // (enough for 60,000 events/s over the run), so that the load child competes for the
  // machine's cores as little as it can; past that, bodies are built on the fly.
  const prebuilt: Buffer[] = [];
  const wanted = Math.ceil((60_000 * (spec.warmupSec + spec.seconds)) / spec.batchSize);
  for (let i = 0; i < wanted; i++) prebuilt.push(build());
  let next = 0;
  const body = (): Buffer => {
    const b = prebuilt[next];
    if (b === undefined) return build();
    prebuilt[next++] = EMPTY;
    return b;
  };

  // the answer stays bytes: only its accepted results are counted (no 130 KB string to
  // decode and collect per batch answer)
  const send = (payload: Buffer) =>
    new Promise<{ status: number; answer: Buffer }>((resolve, reject) => {
      const headers: Record<string, string | number> = {
        "content-type": "application/json",
        "content-length": payload.length,
        "rendezvous-producer": "bench/loader",
      };
      if (spec.auth === "key") headers.authorization = `Bearer ${KEY}`;
      else {
        const t = Math.floor(Date.now() / 1000);
        headers["rendezvous-signature"] =
          `t=${t},v1=${createHmac("sha256", SECRET).update(`${t}.`).update(payload).digest("hex")}`;
      }
      const req = request(target, { method: "POST", agent, headers }, (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, answer: Buffer.concat(chunks) }));
        res.on("error", reject);
      });
      req.on("error", reject);
      req.end(payload);
    });

  const lane = async () => {
    while (!stop) {
      const payload = body();
      const t0 = performance.now();
      const { status, answer } = await send(payload);
      const n = status === 202 ? 1 : status === 200 ? count(answer, ACCEPTED) : 0;
      acceptedTotal += n;
      const counted = counting;
      if (!counted) continue;
      latencies.push(performance.now() - t0);
      requests++;
      if (spec.mode === "single") {
        if (status === 202) accepted++;
        else failures[String(status)] = (failures[String(status)] ?? 0) + 1;
      } else if (status === 200) {
        accepted += n;
        if (n !== spec.batchSize) failures.rejected = (failures.rejected ?? 0) + spec.batchSize - n;
      } else failures[String(status)] = (failures[String(status)] ?? 0) + 1;
    }
  };

  const lanes = Array.from({ length: spec.inFlight }, lane);
  await new Promise((r) => setTimeout(r, spec.warmupSec * 1000));
  counting = true;
  const t0 = performance.now();
  const cpu0 = process.cpuUsage();
  const accepted0 = accepted;
  await new Promise((r) => setTimeout(r, spec.seconds * 1000));
  counting = false;
  const cpu = process.cpuUsage(cpu0);
  const childUs = (cpu.user + cpu.system) / Math.max(1, accepted - accepted0);
  const seconds = (performance.now() - t0) / 1000;
  stop = true;
  await Promise.all(lanes);
  agent.destroy();
  latencies.sort((a, b) => a - b);
  const at = (q: number) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? Number.NaN;
  return { accepted, acceptedTotal, requests, failures, seconds, p50Ms: at(0.5), p99Ms: at(0.99), childUs };
}

const ACCEPTED = Buffer.from('"status":"accepted"');
const EMPTY = Buffer.alloc(0);

/** Occurrences of `needle` in `bytes`. */
function count(bytes: Buffer, needle: Buffer): number {
  let n = 0;
  for (let at = bytes.indexOf(needle); at >= 0; at = bytes.indexOf(needle, at + needle.length)) n++;
  return n;
}

// ------------------------------------------------------------------ main

async function main(): Promise<void> {
  const quick = argv.includes("--quick");
  const secondsArg = argv.indexOf("--seconds");
  const seconds = secondsArg >= 0 ? Number(argv[secondsArg + 1]) : quick ? 1 : 3;
  // Long enough for V8 to optimise the API's hot path (measured: with 1 s the batch
  // scenario ran at about 80 % of its rate in a warmed-up process); --warmup N to change.
  const warmupArg = argv.indexOf("--warmup");
  const warmupSec = warmupArg >= 0 ? Number(argv[warmupArg + 1]) : quick ? 0.3 : 3;
  const pairsArg = argv.indexOf("--pairs");
  const pairCount = pairsArg >= 0 ? Number(argv[pairsArg + 1]) : quick ? 0 : 3;

  // Workspace packages come from their sources (this process runs with the source condition).
  const { createLogger, createRedis, parseConfig, Store, startRedisServer } = await import("@rendezvous/engine");
  const { ingestRoutes, frameworkErrors } = await import("@rendezvous/http");
  const { default: Fastify } = await import("fastify");

  const log = (m: string) => process.stderr.write(`[bench:ingest] ${m}\n`);
  const server = await startRedisServer({ aof: true, fsync: "everysec" });
  const watchdog = setTimeout(
    () => {
      log("watchdog: over time, stopping");
      process.kill(server.pid, "SIGKILL");
      process.exit(2);
    },
    (quick ? 60 : 180) * 1000,
  );
  watchdog.unref();
  log(`redis-server pid ${server.pid} on ${server.url} (AOF everysec)`);

  const redis = createRedis(server.url, { name: "bench:api" });
  const config = parseConfig({
    partitions: 16,
    maxPayloadBytes: 65_536,
    tenants: { bench: { producers: { loader: { keys: [KEY], secrets: [SECRET], eventTypes: ["bench.*"] } } } },
    eventTypes: {
      "bench.event": {
        payloadSchema: {
          type: "object",
          required: ["amount"],
          properties: { amount: { type: "number" }, note: { type: "string" } },
        },
      },
    },
  });
  const store = new Store({ redis, prefix: "bench", config });
  const app = Fastify({ logger: false, frameworkErrors });
  await app.register(ingestRoutes, { store, config, logger: createLogger({ level: "warn" }) });
  const url = await app.listen({ host: "127.0.0.1", port: 0 });
  log(`API on ${url}`);

  // Every scenario starts from the same place: an empty dataset and a freshly rewritten
  // AOF, with automatic AOF rewrites off. A rewrite forks a child that takes a whole core
  // for seconds once the dataset has grown (measured: 2–5 s per rewrite by the batch
  // scenarios); on two cores it would land on whichever scenario happened to be running,
  // and the later scenarios, with more data behind them, would pay the most.
  const commandStats = argv.includes("--commandstats");
  await redis.config("SET", "auto-aof-rewrite-percentage", "0");
  const fresh = async (): Promise<void> => {
    await redis.flushall();
    await redis.bgrewriteaof();
    for (;;) {
      const p = await redis.info("persistence");
      if (/^aof_rewrite_in_progress:0/m.test(p) && /^aof_rewrite_scheduled:0/m.test(p)) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    if (commandStats) await redis.config("RESETSTAT");
  };

  /** CPU seconds of redis-server's main thread so far (INFO cpu): user and system (kernel) time. */
  const redisCpu = async (): Promise<{ user: number; sys: number }> => {
    const info = await redis.info("cpu");
    const field = (name: string) => Number(new RegExp(`^${name}:([\\d.]+)`, "m").exec(info)?.[1] ?? Number.NaN);
    const user = field("used_cpu_user_main_thread");
    return Number.isNaN(user)
      ? { user: field("used_cpu_user"), sys: field("used_cpu_sys") }
      : { user, sys: field("used_cpu_sys_main_thread") };
  };
  /** CPU seconds of this process (the API) so far. */
  const apiCpu = (): number => {
    const u = process.cpuUsage();
    return (u.user + u.system) / 1e6;
  };
  /** Measures Redis and API CPU spent while `run` appends `events()` events. */
  const metered = async <T>(run: () => Promise<T>, events: (r: T) => number) => {
    const r0 = await redisCpu();
    const a0 = apiCpu();
    const result = await run();
    const n = events(result);
    const r1 = await redisCpu();
    const redisUs = (r1.user + r1.sys - r0.user - r0.sys) * 1e6;
    const apiUs = (apiCpu() - a0) * 1e6;
    return {
      result,
      redisUsPerEvent: redisUs / n,
      redisSysShare: (r1.sys - r0.sys) / Math.max(1e-9, r1.user + r1.sys - r0.user - r0.sys),
      apiUsPerEvent: apiUs / n,
    };
  };

  type Row = { name: string; rate: number; redisUs: number; apiUs: number; detail: string };
  const rows: Row[] = [];
  /** Paired rounds: the raw ceiling, then batch 500 right after it (see `--pairs`). */
  const pairs: Array<{ raw: number; batch: number }> = [];

  // ---- raw ceiling: pipelined XADD of entries the size of one event
  const measureRaw = async (): Promise<Row> => {
    await fresh();
    const raw = createRedis(server.url, { name: "bench:raw" });
    const entry = eventJson("raw", 123_456);
    const keys = Array.from({ length: 16 }, (_, p) => `{raw:p${p}}:s`);
    const rawRun = await metered(
      async () => {
        let appended = 0;
        const rawEnd = performance.now() + (warmupSec + seconds) * 1000;
        const rawStart = performance.now() + warmupSec * 1000;
        let counted = 0;
        let countedFrom = 0;
        while (performance.now() < rawEnd) {
          const pipeline = raw.pipeline();
          for (let i = 0; i < 1000; i++) pipeline.xadd(keys[i % 16] as string, "*", "e", entry);
          await pipeline.exec();
          appended += 1000;
          if (performance.now() >= rawStart) {
            if (countedFrom === 0) countedFrom = performance.now();
            else counted += 1000;
          }
        }
        return { appended, rate: counted / ((performance.now() - countedFrom) / 1000) };
      },
      (r) => r.appended,
    );
    const rawRate = rawRun.result.rate;
    const appended = rawRun.result.appended;
    await raw.del(...keys);
    await raw.quit();
    log(`raw XADD: ${Math.round(rawRate)}/s`);
    return {
      name: "raw XADD (pipelined, 1 client)",
      rate: rawRate,
      redisUs: rawRun.redisUsPerEvent,
      apiUs: rawRun.apiUsPerEvent,
      detail: `${appended} entries; the "api" CPU is the ioredis client's; ${sysPart(rawRun.redisSysShare)}`,
    };
  };

  try {
    const baselines = !argv.includes("--no-baselines");
    if (baselines) rows.push(await measureRaw());

    // ---- the Store alone (no HTTP, no validation): what the ingest routes sit on; 4 batches in flight
    if (baselines) {
      await fresh();
      const direct = await metered(
        async () => {
          let accepted = 0;
          let total = 0;
          let counting = false;
          let stop = false;
          let batchNo = 0;
          const lane = async () => {
            while (!stop) {
              const b = batchNo++;
              const events = Array.from({ length: 500 }, (_, i) => JSON.parse(eventJson(`direct${b}`, i)));
              const results = await store.ingest("bench", "loader", events);
              const n = results.filter((r) => r.status === "accepted").length;
              total += n;
              if (counting) accepted += n;
            }
          };
          const lanes = Array.from({ length: 4 }, lane);
          await new Promise((r) => setTimeout(r, warmupSec * 1000));
          counting = true;
          const t0 = performance.now();
          await new Promise((r) => setTimeout(r, seconds * 1000));
          counting = false;
          const rate = accepted / ((performance.now() - t0) / 1000);
          stop = true;
          await Promise.all(lanes);
          return { rate, total };
        },
        (r) => r.total,
      );
      const rate = direct.result.rate;
      if (commandStats) log(`store.ingest direct: ${await commandTime(redis, direct.result.total)}`);
      rows.push({
        name: "store.ingest direct, batch 500 ×4",
        rate,
        redisUs: direct.redisUsPerEvent,
        apiUs: direct.apiUsPerEvent,
        detail: `in process: no HTTP, auth or validation; ${sysPart(direct.redisSysShare)}`,
      });
      log(`store.ingest direct: ${Math.round(rate)}/s`);
    }

    const scenarios: Array<{ name: string; spec: Omit<LoadSpec, "url" | "warmupSec" | "seconds" | "runId"> }> = [
      { name: "single, key, 64 in flight", spec: { mode: "single", batchSize: 1, inFlight: 64, auth: "key" } },
      { name: "single, signed, 64 in flight", spec: { mode: "single", batchSize: 1, inFlight: 64, auth: "signature" } },
      { name: "batch 100, key, 8 in flight", spec: { mode: "batch", batchSize: 100, inFlight: 8, auth: "key" } },
      {
        name: "batch 500, signed, 4 in flight",
        spec: { mode: "batch", batchSize: 500, inFlight: 4, auth: "signature" },
      },
    ];
    const onlyAt = argv.indexOf("--only");
    const only = onlyAt >= 0 ? argv[onlyAt + 1] : undefined;
    const measureScenario = async (s: (typeof scenarios)[number], i: number, warm: number): Promise<Row> => {
      const spec: LoadSpec = { ...s.spec, url, warmupSec: warm, seconds, runId: `r${Date.now().toString(36)}${i}` };
      await fresh();
      const run = await metered(
        () => loadInChild(spec),
        (r) => r.acceptedTotal,
      );
      if (commandStats) {
        log(`${s.name}: ${await commandTime(redis, run.result.acceptedTotal)}`);
        const p = await redis.info("persistence");
        log(
          `${s.name}: ${[...p.matchAll(/^(aof_rewrites|aof_last_rewrite_time_sec|aof_delayed_fsync|aof_current_size):(\d+)/gm)].map((m) => `${m[1]}=${m[2]}`).join(" ")}`,
        );
      }
      const result = run.result;
      const failures = Object.entries(result.failures)
        .map(([k, v]) => `${k}×${v}`)
        .join(" ");
      log(`${s.name}: ${Math.round(result.accepted / result.seconds)} events/s`);
      return {
        name: s.name,
        rate: result.accepted / result.seconds,
        redisUs: run.redisUsPerEvent,
        apiUs: run.apiUsPerEvent,
        detail: `${Math.round(result.requests / result.seconds)} req/s, p50 ${ms(result.p50Ms)}, p99 ${ms(result.p99Ms)}; load child ${result.childUs.toFixed(1)} µs/ev; ${sysPart(run.redisSysShare)}${failures ? `, failed: ${failures}` : ""}`,
      };
    };
    for (const [i, s] of scenarios.entries()) {
      if (only && !s.name.includes(only)) continue;
      // the first scenario also warms the API up (JIT, connections): a longer warm-up
      rows.push(await measureScenario(s, i, i === 0 ? warmupSec * 2 : warmupSec));
    }

    // ---- paired rounds: the raw ceiling and batch 500 back to back, N times. This VM's
    // speed drifts by ±20 % from one minute to the next, so a ratio between two runs
    // minutes apart says as much about the drift as about the code; each pair runs
    // within about 20 s, and the median pair is the headline.
    const batchScenario = scenarios.find((s) => s.name.startsWith("batch 500"));
    if (baselines && batchScenario && (!only || batchScenario.name.includes(only))) {
      for (let k = 0; k < pairCount; k++) {
        const raw = await measureRaw();
        const batch = await measureScenario(batchScenario, 100 + k, warmupSec);
        pairs.push({ raw: raw.rate, batch: batch.rate });
        log(`pair ${k + 1}: raw ${Math.round(raw.rate)}/s, batch 500 ${Math.round(batch.rate)}/s`);
      }
    }
  } finally {
    await app.close();
    await redis.quit();
    await server.stop();
    clearTimeout(watchdog);
  }

  const rawRow = rows.find((r) => r.name.startsWith("raw"));
  const ceiling = rawRow?.rate ?? Number.NaN;
  const cpu = cpus();
  console.log(
    `\ningest throughput — ${cpu.length} × ${cpu[0]?.model ?? "cpu"}, node ${process.version} (API: ${process.execArgv.includes(YOUNG_GENERATION) ? YOUNG_GENERATION : "default heap"}), ${seconds} s per scenario` +
      `${quick ? " (quick)" : ""}; API, redis-server and the load child share the machine` +
      ` (load average ${loadavg()
        .map((l) => l.toFixed(1))
        .join(" ")})`,
  );
  const w = Math.max(...rows.map((r) => r.name.length));
  const head = ["events/s", "vs XADD", "redis µs/ev", "api µs/ev"];
  console.log(`${"scenario".padEnd(w)}  ${head.map((h) => h.padStart(11)).join("  ")}  detail`);
  console.log(`${"-".repeat(w)}  ${head.map(() => "-".repeat(11)).join("  ")}  ------`);
  for (const r of rows) {
    const cells = [
      Math.round(r.rate).toLocaleString("en-US"),
      `${((r.rate / ceiling) * 100).toFixed(1)} %`,
      r.redisUs.toFixed(1),
      r.apiUs.toFixed(1),
    ];
    console.log(`${r.name.padEnd(w)}  ${cells.map((c) => c.padStart(11)).join("  ")}  ${r.detail}`);
  }
  const batchRows = rows.filter((r) => r.name.startsWith("batch"));
  if (batchRows.length === 0) return;
  const batchBest = Math.max(...batchRows.map((r) => r.rate));
  const direct = rows.find((r) => r.name.startsWith("store.ingest"))?.rate ?? Number.NaN;
  if (pairs.length > 0) {
    const ratios = pairs.map((p) => p.batch / p.raw);
    const sorted = [...ratios].sort((a, b) => a - b);
    const median = sorted[Math.floor((sorted.length - 1) / 2)] as number;
    const each = pairs
      .map(
        (p, k) =>
          `${Math.round(p.raw).toLocaleString("en-US")} → ${Math.round(p.batch).toLocaleString("en-US")}/s: ${((ratios[k] as number) * 100).toFixed(1)} %`,
      )
      .join("; ");
    console.log(`\npaired rounds (raw XADD, then batch 500 right after): ${each}`);
    console.log(
      `batch 500 / raw XADD = ${(median * 100).toFixed(1)} % (median of ${pairs.length} pairs; target ≥ 40 %); the table's rows, minutes apart: ${((batchBest / ceiling) * 100).toFixed(1)} %`,
    );
  } else {
    console.log(`\nbatch / raw XADD = ${((batchBest / ceiling) * 100).toFixed(1)} % (target ≥ 40 %)`);
  }
  console.log(`batch over HTTP / store.ingest direct = ${((batchBest / direct) * 100).toFixed(1)} %`);
  const bestBatchRow = rows.filter((r) => r.name.startsWith("batch")).sort((a, b) => a.redisUs - b.redisUs)[0];
  if (rawRow && bestBatchRow) {
    console.log(
      `Redis CPU per event: raw XADD ${rawRow.redisUs.toFixed(1)} µs, batch ingest ${bestBatchRow.redisUs.toFixed(1)} µs` +
        ` (${(bestBatchRow.redisUs / rawRow.redisUs).toFixed(0)} XADDs' worth); API CPU per batched event ${bestBatchRow.apiUs.toFixed(1)} µs`,
    );
  }
}

/**
 * Where Redis spends its time, from INFO commandstats (commands called by scripts are
 * counted too, so a script's time includes theirs): µs per event for each command.
 */
async function commandTime(redis: { info(section: string): Promise<string> }, events: number): Promise<string> {
  const info = await redis.info("commandstats");
  const rows = [...info.matchAll(/^cmdstat_([^:]+):calls=(\d+),usec=(\d+)/gm)]
    .map((m) => ({ name: m[1] as string, calls: Number(m[2]), usec: Number(m[3]) }))
    .filter((r) => r.usec > 0)
    .sort((a, b) => b.usec - a.usec);
  return rows.map((r) => `${r.name} ${(r.usec / events).toFixed(2)} µs/ev (${r.calls} calls)`).join(", ");
}

/** The kernel's share of redis-server's CPU (socket reads and writes, AOF writes: callgrind does not see it). */
function sysPart(share: number): string {
  return `redis ${(share * 100).toFixed(0)} % sys`;
}

/** A latency for the table (`—` when no request completed in the window; JSON turns NaN into null). */
function ms(value: number | null): string {
  return value === null || Number.isNaN(value) ? "—" : `${value.toFixed(1)} ms`;
}

/** Runs one load scenario in a child process (this file, `--load-child`) and reads its JSON result. */
function loadInChild(spec: LoadSpec): Promise<LoadResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...process.execArgv, self, "--load-child", JSON.stringify(spec)], {
      stdio: ["ignore", "pipe", "inherit"],
    });
    let out = "";
    child.stdout.on("data", (d: Buffer) => {
      out += d.toString();
    });
    child.on("error", reject);
    child.on("exit", (code) => {
      if (code !== 0) reject(new Error(`load child exited ${code}`));
      else resolve(JSON.parse(out) as LoadResult);
    });
  });
}

// ------------------------------------------------------------------ entry

const childAt = argv.indexOf("--load-child");
if (childAt >= 0) {
  const result = await runLoad(JSON.parse(argv[childAt + 1] as string) as LoadSpec);
  process.stdout.write(JSON.stringify(result));
} else if (!process.execArgv.includes(SOURCE_CONDITION)) {
  // Re-run with the source condition so the workspace packages need no build step, and
  // with the young generation the CLI's launchers give the API (docs/operations.md,
  // "Node.js flags"): this process is the API. `--default-heap` measures without it.
  const heap = argv.includes("--default-heap") ? [] : [YOUNG_GENERATION];
  const r = spawnSync(process.execPath, [...process.execArgv, ...heap, SOURCE_CONDITION, self, ...argv], {
    stdio: "inherit",
  });
  process.exit(r.status ?? 1);
} else {
  await main();
}
