/**
 * Chaos and soak runs (not a unit test). `npm run chaos -- --duration 60s [--seed N]`,
 * `npm run soak` (= `--soak --duration 10m`).
 *
 * Starts a private redis-server (AOF, `appendfsync always`) on a free loopback port in a
 * temp dir, the roles as separate CLI processes (api, 2 matchers, scheduler,
 * dispatcher) and the workload (chaos/workload.ts). Chaos mode SIGKILLs a random role
 * every few seconds (restarting it) and restarts Redis from its AOF at least once a
 * minute (SIGKILL, sometimes SIGTERM, then a new redis-server on the same port and dir).
 * Then it stops the faults, lets the system quiesce, reads everything back
 * (chaos/check.ts) and writes the report (chaos/report.ts): exit 1 on any violation.
 * Soak mode: a steady rate, no faults, short retention, memory sampled (chaos/soak.ts).
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { type ConfigInput, createResources, freePort, parseConfig } from "@rendezvous/engine";
import type { Wait } from "@rendezvous/protocol";
import { mulberry32 } from "@rendezvous/testkit/random";
import { Queue } from "bullmq";
import { Redis } from "ioredis";
import { pino } from "pino";
import { check } from "./check.js";
import { ChaosHttp } from "./http.js";
import { ChaosRedis, type FaultRecord, RoleProcess, type RoleSpec } from "./procs.js";
import { buildReport, formatReport } from "./report.js";
import { DRIVER, rssMb, type Sample, sampleRedis, summarize } from "./soak.js";
import { ADMIN_TOKEN, EVENT_TYPE, FAR_TIMEOUT_MS, HOST_KEY, PRODUCERS, TENANT, Workload } from "./workload.js";

// ---- options
const argv = process.argv.slice(2);
const value = (name: string) => {
  const i = argv.indexOf(`--${name}`);
  return i >= 0 ? argv[i + 1] : undefined;
};
function duration(text: string): number {
  const m = /^(\d+(?:\.\d+)?)(ms|s|m|h)?$/.exec(text);
  if (!m) throw new Error(`bad duration ${text} (e.g. 60s, 10m)`);
  return Number(m[1]) * { ms: 1, s: 1000, m: 60_000, h: 3_600_000 }[(m[2] ?? "s") as "ms" | "s" | "m" | "h"];
}
const SOAK = argv.includes("--soak");
const DURATION_MS = duration(value("duration") ?? (SOAK ? "10m" : "60s"));
const SEED = Number(value("seed") ?? Math.floor(Math.random() * 2 ** 31));
const RATE = Number(value("rate") ?? (SOAK ? 12 : 10));
const BOUND_MS = 10_000;
const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const stamp = new Date().toISOString().replace(/[:.]/g, "-");
const REPORT = resolve(value("report") ?? join(root, "chaos", "results", `${stamp}-${SOAK ? "soak" : "chaos"}.json`));
const KEEP = argv.includes("--keep");
/** breaks two things on purpose before the check, to show the checker catching them (exit 1) */
const SABOTAGE = argv.includes("--sabotage");

const random = mulberry32(SEED);
const rand = (lo: number, hi: number) => lo + random() * (hi - lo);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const say = (msg: string) => process.stdout.write(`[chaos ${new Date().toISOString().slice(11, 19)}] ${msg}\n`);

// ---- deployment
const PREFIX = "chaos";
const RETENTION_MS = SOAK ? 120_000 : 86_400_000;
const CONFIG: ConfigInput = {
  partitions: 8,
  claimIdleMs: 2000,
  adminToken: ADMIN_TOKEN,
  retentionMs: RETENTION_MS,
  dedupWindowMs: SOAK ? 180_000 : 604_800_000,
  tenants: {
    [TENANT]: {
      hostKeys: [HOST_KEY],
      producers: {
        p1: { keys: [PRODUCERS.p1.key], eventTypes: ["job.*"] },
        p2: { secrets: [PRODUCERS.p2.secret], eventTypes: [EVENT_TYPE] },
      },
    },
  },
};

async function main(): Promise<number> {
  say(`${SOAK ? "soak" : "chaos"} run: ${DURATION_MS / 1000} s, seed ${SEED}, ${RATE} scenarios/s`);
  const dir = mkdtempSync(join(tmpdir(), "rdv-chaos-"));
  const logDir = join(dir, "logs");
  mkdirSync(logDir, { recursive: true });
  const configFile = join(dir, "config.json");
  writeFileSync(configFile, JSON.stringify(CONFIG, null, 2));
  const faults: FaultRecord[] = [];
  const redis = await ChaosRedis.start(join(dir, "redis"), "always");
  say(`redis-server pid ${redis.pid} on ${redis.url} (AOF, appendfsync always), logs in ${logDir}`);

  const apiPort = await freePort();
  const specs: RoleSpec[] = [
    { name: "api", role: "api", port: apiPort },
    { name: "matcher-1", role: "matcher", port: 0 },
    { name: "matcher-2", role: "matcher", port: 0 },
    { name: "scheduler", role: "scheduler", port: 0 },
    { name: "dispatcher", role: "dispatcher", port: 0 },
  ];
  const env = { RENDEZVOUS_PREFIX: PREFIX, RENDEZVOUS_FROM_SOURCE: "1", LOG_LEVEL: "info" };
  const roles = specs.map((s) => new RoleProcess(s, env, ["--config", configFile, "--redis-url", redis.url], logDir));
  const res = createResources({
    redisUrl: redis.url,
    prefix: PREFIX,
    config: parseConfig(CONFIG),
    logger: pino({ level: "silent" }),
  });
  let exitCode = 1;
  try {
    await Promise.all(roles.map((r) => r.start()));
    say(`roles up: ${roles.map((r) => `${r.spec.name} pid ${r.pid}`).join(", ")}`);

    const http = new ChaosHttp(`http://127.0.0.1:${apiPort}`);
    const workload = new Workload({
      http,
      redis: { host: "127.0.0.1", port: redis.port },
      prefix: PREFIX,
      rate: RATE,
      random,
    });
    workload.startContinuationWorkers();
    const startedAt = Date.now();
    const faultsUntil = startedAt + DURATION_MS;

    let redisDown = false;
    // a supervisor restarts any role that died (killed by us or on its own)
    const restarting = new Set<RoleProcess>();
    let supervising = true;
    const supervisor = (async () => {
      while (supervising) {
        for (const r of roles) {
          if (!r.alive && !restarting.has(r) && !redisDown) {
            restarting.add(r);
            void r
              .restart()
              .then(() => faults.push({ at: Date.now(), what: "restart", target: r.spec.name, pid: r.pid }))
              .catch((err) => say(`cannot restart ${r.spec.name}: ${err.message}`))
              .finally(() => restarting.delete(r));
          }
        }
        await sleep(250);
      }
    })();

    const injector = SOAK
      ? Promise.resolve()
      : (async () => {
          let nextRedis = startedAt + rand(10_000, 30_000);
          while (Date.now() < faultsUntil) {
            await sleep(rand(2000, 5000));
            if (Date.now() >= faultsUntil) break;
            if (Date.now() >= nextRedis) {
              const how = random() < 0.75 ? "kill" : "term";
              faults.push({
                at: Date.now(),
                what: how === "kill" ? "redis_kill" : "redis_term",
                target: "redis",
                pid: redis.pid,
              });
              redisDown = true;
              await redis.down(how);
              await sleep(rand(200, 2000));
              await redis.up();
              redisDown = false;
              faults.push({ at: Date.now(), what: "redis_restart", target: "redis", pid: redis.pid });
              say(`redis restarted from its AOF (${how === "kill" ? "SIGKILL" : "SIGTERM"}), pid ${redis.pid}`);
              nextRedis = Date.now() + rand(20_000, 45_000);
              continue;
            }
            const candidates = roles.filter((r) => r.alive && !restarting.has(r));
            const victim = candidates[Math.floor(random() * candidates.length)];
            if (!victim) continue;
            restarting.add(victim);
            faults.push({ at: Date.now(), what: "kill", target: victim.spec.name, pid: victim.pid });
            await victim.kill("SIGKILL");
            say(`SIGKILL ${victim.spec.name}`);
            void (async () => {
              await sleep(rand(100, 1500));
              while (redisDown) await sleep(100);
              try {
                await victim.restart();
                faults.push({ at: Date.now(), what: "restart", target: victim.spec.name, pid: victim.pid });
              } catch (err) {
                say(`cannot restart ${victim.spec.name}: ${(err as Error).message}`);
              } finally {
                restarting.delete(victim);
              }
            })();
          }
        })();

    // soak: sample memory while the workload runs
    const samples: Sample[] = [];
    let sampling = SOAK;
    const probe = SOAK ? new Redis(redis.url, { maxRetriesPerRequest: 3 }) : undefined;
    const takeSample = async (probe: Redis) => {
      const r = await sampleRedis(probe, PREFIX);
      const rss: Record<string, number> = { [DRIVER]: rssMb(process.pid), redis: rssMb(redis.pid) };
      for (const role of roles) rss[role.spec.name] = rssMb(role.pid);
      const { entries, ...mem } = r;
      samples.push({ t: Math.round((Date.now() - startedAt) / 1000), rssMb: rss, redis: mem, entries });
      const perWait = mem.completedJobs > 0 ? Math.round(mem.continuationJobBytes / mem.completedJobs) : "-";
      say(`sample t=${samples.at(-1)?.t}s redis ${mem.usedMb} MB, ${mem.keys} keys, continuations ${perWait} B/wait`);
    };
    const sampler = (async () => {
      if (!probe) return;
      while (sampling) {
        await takeSample(probe);
        const next = Date.now() + 20_000;
        while (sampling && Date.now() < next) await sleep(250);
      }
    })();

    let progress = true;
    void (async () => {
      while (progress) {
        await sleep(10_000);
        if (progress)
          say(
            `t=${Math.round((Date.now() - startedAt) / 1000)}s scenarios ${workload.started}, faults ${faults.length}`,
          );
      }
    })();
    await workload.run(DURATION_MS);
    await injector;
    say("faults stopped; waiting for restarts and for the workload's scenarios to finish");
    while (restarting.size > 0 || roles.some((r) => !r.alive)) await sleep(200);
    const faultsEnded = Date.now();
    await workload.drain();
    progress = false;
    say(`workload done: ${workload.started} scenarios; quiescing`);
    await quiesce(res, workload.log.waits.map((w) => w.id).filter(Boolean), faultsEnded);
    sampling = false;
    await sampler;
    if (probe) {
      // the last sample once the jobs completed last are past the compaction delay and a
      // sweep (the scheduler's, each second) has run: what a deployment holds at rest
      const compactAfterMs = parseConfig(CONFIG).continuationCompactAfterMs;
      say(`waiting ${Math.round((compactAfterMs + 3000) / 1000)} s for the last compaction, then the last sample`);
      await sleep(compactAfterMs + 3000);
      await takeSample(probe);
      probe.disconnect();
    }
    supervising = false;
    await supervisor;
    await workload.closeWorkers();

    if (SABOTAGE) await sabotage(res, workload);
    say("checking invariants");
    const now = Date.now();
    const { counts, violations } = await check({
      res,
      log: workload.log,
      faults,
      boundMs: BOUND_MS,
      now,
      retentionMs: RETENTION_MS,
    });
    const unexpected = roles.flatMap((r) => r.unexpectedExits.map((e) => ({ role: r.spec.name, ...e })));
    const soak = SOAK
      ? summarize(samples, Math.round((Math.max(RETENTION_MS, 180_000) + 60_000) / 1000), {
          partitions: CONFIG.partitions ?? 16,
          farthestMs: FAR_TIMEOUT_MS[1],
        })
      : undefined;
    const report = buildReport({
      mode: SOAK ? "soak" : "chaos",
      seed: SEED,
      startedAt,
      durationMs: DURATION_MS,
      settings: {
        rate: RATE,
        boundMs: BOUND_MS,
        partitions: CONFIG.partitions,
        claimIdleMs: CONFIG.claimIdleMs,
        retentionMs: CONFIG.retentionMs,
        dedupWindowMs: CONFIG.dedupWindowMs,
        appendfsync: "always",
        roles: specs.map((s) => s.name),
        unexpectedExits: unexpected,
        workloadErrors: workload.log.errors.slice(0, 20),
        logs: logDir,
      },
      faults,
      counts,
      violations,
      soak,
    });
    mkdirSync(dirname(REPORT), { recursive: true });
    writeFileSync(REPORT, `${JSON.stringify(report, null, 2)}\n`);
    const text = formatReport(report);
    writeFileSync(REPORT.replace(/\.json$/, ".txt"), `${text}\n`);
    process.stdout.write(`\n${text}\n\nreport: ${REPORT}\n`);
    if (workload.log.errors.length > 0)
      say(`${workload.log.errors.length} scenario(s) threw: ${workload.log.errors[0]?.error}`);
    exitCode = report.ok ? 0 : 1;
  } finally {
    await Promise.all(roles.map((r) => r.kill("SIGTERM")));
    for (const r of roles) r.close();
    await res.close().catch(() => undefined);
    await redis.down("term");
    if (exitCode === 0 && !KEEP) rmSync(dir, { recursive: true, force: true });
    else say(`kept ${dir} (Redis AOF and role logs)`);
  }
  return exitCode;
}

/**
 * `--sabotage`: removes the continuation job of one settled wait (a lost continuation) and
 * records a second first-claimer for another (as a broken `consume` would answer).
 */
async function sabotage(res: ReturnType<typeof createResources>, workload: Workload): Promise<void> {
  const settled = workload.log.waits.filter((w) => w.id && w.observations.some((o) => o.state !== "waiting"));
  const [a, b] = settled;
  if (!a || !b) return;
  const queue = new Queue(`continuations.${TENANT}`, {
    connection: res.connect("chaos-sabotage"),
    prefix: res.queuePrefix,
  });
  try {
    await queue.remove(a.id);
  } finally {
    await queue.close();
  }
  b.grants.push({ by: "saboteur", at: Date.now(), via: "consume" });
  say(`sabotage: removed the continuation job of ${a.id}, a second first grant on ${b.id}`);
}

/** Waits until no known wait is overdue and no continuation is queued or running (at most 60 s). */
async function quiesce(res: ReturnType<typeof createResources>, waitIds: string[], since: number): Promise<void> {
  const queue = new Queue(`continuations.${TENANT}`, {
    connection: res.connect("chaos-quiesce"),
    prefix: res.queuePrefix,
  });
  try {
    const end = Date.now() + 60_000;
    let quiet = 0;
    while (Date.now() < end) {
      const counts = await queue.getJobCounts("waiting", "active", "delayed", "prioritized");
      const busy = Object.values(counts).reduce((a, b) => a + b, 0);
      let overdue = 0;
      for (let i = 0; i < waitIds.length; i += 500) {
        const ws = (await res.store.getWaits(waitIds.slice(i, i + 500))) as Array<Wait | null>;
        overdue += ws.filter((w) => w?.state === "waiting" && w.deadline && Date.parse(w.deadline) < Date.now()).length;
      }
      quiet = busy === 0 && overdue === 0 ? quiet + 1 : 0;
      if (quiet >= 3 && Date.now() - since > 3000) return;
      await sleep(1000);
    }
    say("quiescence not reached in 60 s; checking anyway");
  } finally {
    await queue.close();
  }
}

process.exit(await main());
