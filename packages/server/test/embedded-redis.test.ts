/**
 * `rendezvous start`'s embedded Redis for real use, with real processes on one temp data
 * dir: the address file `<data-dir>/redis.url` (written once Redis answers, in the log
 * line as plain text, removed on a clean stop, the last port reused when free); the lock
 * `<data-dir>/start.lock` (a second start refuses in one stderr line before starting
 * anything; a SIGKILLed start's lock is taken over and its orphaned redis-server shut
 * down, its AOF kept); `doctor` checking the embedded Redis by default; a taken HTTP port
 * refused in one line before anything starts. "One redis-server per data dir" is read from
 * /proc: redis-server chdirs into its dir, so its /proc/<pid>/cwd names it.
 */
import {
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  realpathSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type CliProcess, freePort, spawnCli, uniquePrefix } from "@rendezvous/testkit";
import { Redis } from "ioredis";
import { afterAll, describe, expect, it } from "vitest";
import { LISTENING } from "./e2e-helpers.js";

const dataDir = mkdtempSync(join(tmpdir(), "rdv-embedded-"));
const otherDir = mkdtempSync(join(tmpdir(), "rdv-embedded-port-"));
const deadDir = mkdtempSync(join(tmpdir(), "rdv-embedded-dead-"));
const urlFile = join(dataDir, "redis.url");
const lockFile = join(dataDir, "start.lock");
const prefix = uniquePrefix("emb");
const live: CliProcess[] = [];
const held: Server[] = [];
const env = {
  RENDEZVOUS_PREFIX: prefix,
  REDIS_URL: undefined,
  RENDEZVOUS_CONFIG: undefined,
  RENDEZVOUS_PORT: undefined,
  PORT: undefined,
};

function cli(args: string[]): CliProcess {
  const proc = spawnCli(args, env);
  live.push(proc);
  return proc;
}

async function start(dir = dataDir): Promise<{ proc: CliProcess; url: string; redis: string; redisPid: number }> {
  const proc = cli(["start", "--port", "0", "--data-dir", dir]);
  const url = (await proc.waitFor(LISTENING, 40_000))[1] as string;
  // the address as plain text in the message, not only in a JSON field
  const line = proc.output().match(/^.*"msg":"embedded redis-server started at (redis:\/\/127\.0\.0\.1:\d+) .*$/m);
  const redisPid = Number(line?.[0].match(/"pid":(\d+),"urlFile"/)?.[1]);
  return { proc, url, redis: line?.[1] as string, redisPid };
}

/** PIDs of the redis-servers running in `dir` (their working directory). */
function redisServersIn(dir: string): number[] {
  const want = realpathSync(dir);
  const pids: number[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const cmd = readFileSync(`/proc/${entry}/cmdline`, "utf8");
      if (cmd.startsWith("redis-server") && readlinkSync(`/proc/${entry}/cwd`) === want) pids.push(Number(entry));
    } catch {
      // exited meanwhile
    }
  }
  return pids;
}

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return !readFileSync(`/proc/${pid}/stat`, "utf8").includes(") Z ");
  } catch {
    return false;
  }
}

async function until(check: () => boolean, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error("condition not reached in time");
    await new Promise((r) => setTimeout(r, 50));
  }
}

function stderrLines(proc: CliProcess): string[] {
  return proc.errors().trimEnd().split("\n");
}

function hold(port: number): Promise<Server> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once("error", reject);
    srv.listen(port, "127.0.0.1", () => resolve(srv));
    held.push(srv);
  });
}

afterAll(async () => {
  for (const p of live) await p.terminate();
  for (const s of held) s.close();
  // a start SIGKILLed by a failed test leaves its redis-server behind: stop it by its pid
  for (const pid of [...redisServersIn(join(dataDir, "redis")), ...redisServersIn(join(otherDir))]) {
    process.kill(pid, "SIGKILL");
  }
  rmSync(dataDir, { recursive: true, force: true });
  rmSync(otherDir, { recursive: true, force: true });
  rmSync(deadDir, { recursive: true, force: true });
}, 60_000);

describe("rendezvous start: the embedded Redis's address and the data-dir lock", () => {
  let first: Awaited<ReturnType<typeof start>>;

  it("records the address in <data-dir>/redis.url and its log line, and locks the data dir with its pid", async () => {
    first = await start();
    expect(first.redis).toMatch(/^redis:\/\/127\.0\.0\.1:\d+$/);
    expect(readFileSync(urlFile, "utf8")).toBe(`${first.redis}\n`);
    expect(readFileSync(lockFile, "utf8").trim()).toBe(String(first.proc.pid));
    expect(redisServersIn(join(dataDir, "redis"))).toEqual([first.redisPid]);
    // the first start's banner (it created the dev config) names it too
    expect(first.proc.output()).toContain(`  redis           ${first.redis} (while it runs, also in ${urlFile})`);
  }, 60_000);

  it("a second start on the same data dir refuses in one stderr line and starts nothing", async () => {
    const second = cli(["start", "--port", "0", "--data-dir", dataDir]);
    expect((await second.exited).code).toBe(1);
    expect(stderrLines(second)).toEqual([
      `rendezvous: ${dataDir} is in use by another rendezvous start (pid ${first.proc.pid}): stop it first, or give this one another --data-dir`,
    ]);
    expect(second.output()).toBe(second.errors()); // no log line: no Redis, no roles, no listener
    expect(redisServersIn(join(dataDir, "redis"))).toEqual([first.redisPid]);
    expect(readFileSync(urlFile, "utf8")).toBe(`${first.redis}\n`);
    expect(readFileSync(lockFile, "utf8").trim()).toBe(String(first.proc.pid));
    expect((await fetch(`${first.url}/healthz`)).status).toBe(200);
  }, 60_000);

  it("doctor checks the embedded Redis by default (its address file and dev config)", async () => {
    const doctor = cli(["doctor", "--data-dir", dataDir]);
    expect((await doctor.exited).code).toBe(0);
    const out = doctor.output();
    expect(out).toContain(`checking the embedded Redis at ${first.redis} (from ${urlFile})`);
    expect(out).toMatch(/^ok {4}aof {15}on$/m);
    expect(out).toMatch(/^ok {4}maxmemory-policy {2}noeviction$/m);
    expect(out).toMatch(/^ok {4}partitions {8}stored 16, configured 16$/m);
    expect(out).toMatch(/^ok {4}placement {9}correlation$/m);
  }, 60_000);

  it("a clean stop removes the address file and the lock; the next start reuses the last port", async () => {
    expect(await first.proc.terminate()).toEqual({ code: 0, signal: null });
    expect(existsSync(urlFile)).toBe(false);
    expect(existsSync(lockFile)).toBe(false);
    expect(redisServersIn(join(dataDir, "redis"))).toEqual([]);

    const doctor = cli(["doctor", "--data-dir", dataDir]);
    expect((await doctor.exited).code).toBe(1);
    expect(stderrLines(doctor)).toEqual([
      `rendezvous: no embedded Redis is running: no ${urlFile} (run \`rendezvous start\`, or check another Redis with --redis-url or REDIS_URL)`,
    ]);

    const again = await start();
    expect(again.redis).toBe(first.redis);
    expect(readFileSync(urlFile, "utf8")).toBe(`${first.redis}\n`);
    expect(await again.proc.terminate()).toEqual({ code: 0, signal: null });
  }, 90_000);

  it("when the last port is taken, it picks a free one and records that", async () => {
    const lastPort = Number(new URL(first.redis).port);
    await hold(lastPort);
    const moved = await start();
    expect(moved.redis).not.toBe(first.redis);
    expect(readFileSync(urlFile, "utf8")).toBe(`${moved.redis}\n`);
    first = moved;
  }, 60_000);

  it("a SIGKILLed start's lock is taken over: its orphaned redis-server is shut down (AOF kept), its port reused", async () => {
    const redis = new Redis(first.redis, { maxRetriesPerRequest: 1 });
    await redis.set(`${prefix}:marker`, "kept");
    await redis.quit();
    first.proc.child.kill("SIGKILL");
    expect((await first.proc.exited).signal).toBe("SIGKILL");
    // what the takeover is for: the child outlives its start, on the same AOF dir
    expect(processAlive(first.redisPid)).toBe(true);
    expect(readFileSync(lockFile, "utf8").trim()).toBe(String(first.proc.pid));

    const next = await start();
    expect(next.proc.output()).toContain("a redis-server of this data dir outlived its start: shutting it down");
    await until(() => !processAlive(first.redisPid));
    expect(next.redis).toBe(first.redis);
    expect(readFileSync(lockFile, "utf8").trim()).toBe(String(next.proc.pid));
    expect(redisServersIn(join(dataDir, "redis"))).toEqual([next.redisPid]);
    const after = new Redis(next.redis, { maxRetriesPerRequest: 1 });
    expect(await after.get(`${prefix}:marker`)).toBe("kept");
    await after.quit();
    expect(await next.proc.terminate()).toEqual({ code: 0, signal: null });
  }, 90_000);
});

describe("rendezvous doctor: a recorded embedded Redis that does not answer", () => {
  it("says so in one stderr line and exits 1", async () => {
    const url = `redis://127.0.0.1:${await freePort()}`;
    writeFileSync(join(deadDir, "redis.url"), `${url}\n`);
    const doctor = cli(["doctor", "--data-dir", deadDir]);
    expect((await doctor.exited).code).toBe(1);
    expect(stderrLines(doctor)).toEqual([
      `rendezvous: the embedded Redis recorded in ${join(deadDir, "redis.url")} (${url}) does not answer: is \`rendezvous start\` still running on ${deadDir}?`,
    ]);
  }, 60_000);
});

describe("rendezvous start: a taken HTTP port", () => {
  it("is refused in one stderr line before anything starts (no Redis, no lock left)", async () => {
    const port = await freePort();
    await hold(port);
    const proc = cli(["start", "--port", String(port), "--data-dir", otherDir]);
    expect((await proc.exited).code).toBe(1);
    expect(stderrLines(proc)).toEqual([
      `rendezvous: port ${port} on 127.0.0.1 is in use (another rendezvous?): stop it, or pass --port or set PORT`,
    ]);
    expect(proc.output()).toBe(proc.errors());
    expect(readdirSync(otherDir)).toEqual([]);
  }, 60_000);
});
