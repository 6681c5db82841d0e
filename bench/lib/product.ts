/**
 * The product as users run it: `rendezvous <role>` processes of the CLI
 * (packages/server/bin/rendezvous.js, the flags of `npm start`), each on a free
 * loopback port against a given Redis, and the CPU time a process has used, read
 * from /proc (Linux).
 */
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { sleep } from "./stats.js";

const bin = fileURLToPath(new URL("../../packages/server/bin/rendezvous.js", import.meta.url));

/**
 * What a CLI (this checkout's, or another's `packages/server/bin/rendezvous.js`) runs with
 * `env`: its built JavaScript when present (npm run build), else, or with
 * RENDEZVOUS_FROM_SOURCE set, its sources through tsx (as the bin decides).
 */
export function productBuild(cli = bin, env: NodeJS.ProcessEnv = process.env): "dist" | "sources" {
  return !env.RENDEZVOUS_FROM_SOURCE && existsSync(join(dirname(cli), "../dist/cli.js")) ? "dist" : "sources";
}

/** The packages the CLI runs (packages/server and what it imports). */
const CLI_PACKAGES = ["protocol", "engine", "http", "workers", "server"];

/** The newest modification time (ms) of the files under `dir`, or 0. */
function newestMtime(dir: string): number {
  let newest = 0;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, e.name);
    newest = Math.max(newest, e.isDirectory() ? newestMtime(path) : statSync(path).mtimeMs);
  }
  return newest;
}

/**
 * Where a CLI that runs its built JavaScript would run code older than its sources: the
 * first of its packages whose `src` holds a file newer than anything in its `dist` (edited,
 * or a Lua script regenerated, since the last `npm run build`); undefined where none is.
 */
export function staleBuild(cli = bin, env: NodeJS.ProcessEnv = process.env): string | undefined {
  if (productBuild(cli, env) !== "dist") return undefined;
  const packages = join(dirname(cli), "../..");
  for (const name of CLI_PACKAGES) {
    const src = join(packages, name, "src");
    const dist = join(packages, name, "dist");
    if (existsSync(src) && existsSync(dist) && newestMtime(src) > newestMtime(dist)) return `packages/${name}`;
  }
  return undefined;
}

/** The CLIs checked (with their RENDEZVOUS_FROM_SOURCE), and what each was found to be. */
const checked = new Map<string, string | undefined>();

/**
 * Refuses to start a CLI whose built JavaScript is older than its sources: a measurement of
 * it would be of other code than the checkout's (unless the CLI is told to run its sources).
 */
export function refuseStaleBuild(cli: string, env: NodeJS.ProcessEnv): void {
  const key = `${cli}\0${env.RENDEZVOUS_FROM_SOURCE ?? ""}`;
  if (!checked.has(key)) checked.set(key, staleBuild(cli, env));
  const stale = checked.get(key);
  if (stale) {
    throw new Error(
      `${cli} would run JavaScript older than its sources (${stale}/src is newer than its dist): run npm run build in that checkout, or set RENDEZVOUS_FROM_SOURCE=1`,
    );
  }
}

export type RoleName = "start" | "api" | "matcher" | "dispatcher" | "scheduler";

export interface RoleProcess {
  name: RoleName;
  pid: number;
  child: ChildProcess;
  /** the process's HTTP base URL, once it listens */
  url: Promise<string>;
  /** its last output lines (logs) */
  output(): string;
  stop(): Promise<void>;
}

/** Starts `rendezvous <role>` with `--config`, `--redis-url` and `--port 0`; `env` adds variables (undefined removes one). */
export function startRole(
  name: RoleName,
  opts: {
    redisUrl: string;
    configFile: string;
    prefix: string;
    env?: Record<string, string | undefined>;
    /** Node options before the CLI (e.g. --cpu-prof) */
    nodeArgs?: string[];
    /** the CLI to run (another checkout's, to compare revisions) @defaultValue this checkout's */
    bin?: string;
    /** the Node binary that runs it (another major, to compare runtimes) @defaultValue this process's */
    node?: string;
  },
): RoleProcess {
  const env: NodeJS.ProcessEnv = { ...process.env, RENDEZVOUS_PREFIX: opts.prefix, LOG_LEVEL: "info", ...opts.env };
  for (const [k, v] of Object.entries(env)) if (v === undefined) delete env[k];
  refuseStaleBuild(opts.bin ?? bin, env);
  const child = spawn(
    opts.node ?? process.execPath,
    [
      "--max-semi-space-size=64",
      ...(opts.nodeArgs ?? []),
      opts.bin ?? bin,
      name,
      "--config",
      opts.configFile,
      "--redis-url",
      opts.redisUrl,
      "--port",
      "0",
    ],
    { env, stdio: ["ignore", "pipe", "pipe"] },
  );
  let out = "";
  const url = new Promise<string>((resolve, reject) => {
    const onData = (d: Buffer) => {
      out += d.toString();
      if (out.length > 1_000_000) out = out.slice(-200_000);
      const m = /listening on (http:\S+?)"/.exec(out);
      if (m) resolve(m[1] as string);
    };
    child.stdout?.on("data", onData);
    child.stderr?.on("data", onData);
    child.once("exit", (code) => reject(new Error(`${name} exited (${code}) before listening:\n${out.slice(-2000)}`)));
  });
  url.catch(() => undefined);
  if (child.pid === undefined) throw new Error(`could not start rendezvous ${name}`);
  // a driver that dies leaves no product process behind
  const orphan = () => child.kill("SIGKILL");
  process.once("exit", orphan);
  child.once("exit", () => process.off("exit", orphan));
  return {
    name,
    pid: child.pid,
    child,
    url,
    output: () => out,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((r) => child.once("exit", r));
      child.kill("SIGTERM");
      const timer = setTimeout(() => child.kill("SIGKILL"), 15_000);
      await exited;
      clearTimeout(timer);
    },
  };
}

/** The version (`v24.1.0`) of a Node binary. */
export function nodeVersion(node: string): string {
  return execFileSync(node, ["--version"], { encoding: "utf8" }).trim();
}

/** Polls `GET /readyz` until it answers 200 (Redis reachable, the roles running). */
export async function ready(base: string, maxMs = 30_000): Promise<void> {
  const limit = Date.now() + maxMs;
  for (;;) {
    const status = await fetch(`${base}/readyz`)
      .then(async (r) => {
        await r.arrayBuffer();
        return r.status;
      })
      .catch(() => 0);
    if (status === 200) return;
    if (Date.now() > limit) throw new Error(`${base}/readyz answered ${status} for ${maxMs} ms`);
    await sleep(100);
  }
}

let clockTicks: number | undefined;

/** Clock ticks per second of /proc's times (`getconf CLK_TCK`). */
export function clkTck(): number {
  clockTicks ??= Number(execFileSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).trim()) || 100;
  return clockTicks;
}

/** utime + stime of a process (all its threads) in seconds, from /proc/<pid>/stat. */
export function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  // fields after "(comm) ": state is [0], utime [11], stime [12]
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(fields[11]) + Number(fields[12])) / clkTck();
}

/** A process's main thread (its tid is the pid) now: CPU seconds, and from schedstat the seconds it ran and waited runnable. */
export interface ThreadTimes {
  cpuS: number;
  runS: number;
  waitS: number;
}

export function mainThread(pid: number): ThreadTimes {
  const stat = readFileSync(`/proc/${pid}/task/${pid}/stat`, "utf8");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  const [run, wait] = readFileSync(`/proc/${pid}/task/${pid}/schedstat`, "utf8").trim().split(" ").map(Number);
  return {
    cpuS: (Number(fields[11]) + Number(fields[12])) / clkTck(),
    runS: (run ?? 0) / 1e9,
    waitS: (wait ?? 0) / 1e9,
  };
}

/** CPU seconds of each thread of a process now, summed by thread name (/proc/<pid>/task/<tid>/comm: "node", "V8 DefaultWorke", …). */
export function threadsByName(pid: number): Record<string, number> {
  const out: Record<string, number> = {};
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, "utf8");
      const comm = tid === String(pid) ? "main" : stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")"));
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      out[comm] = (out[comm] ?? 0) + (Number(fields[11]) + Number(fields[12])) / clkTck();
    } catch {
      // the thread ended meanwhile
    }
  }
  return out;
}

/** Main-thread times of each pid now. */
export function threadSnapshot(pids: Record<string, number>): Record<string, ThreadTimes> {
  return Object.fromEntries(Object.entries(pids).map(([name, pid]) => [name, mainThread(pid)]));
}

/** CPU seconds of each pid now. */
export function cpuSnapshot(pids: Record<string, number>): Record<string, number> {
  return Object.fromEntries(Object.entries(pids).map(([name, pid]) => [name, cpuSeconds(pid)]));
}

/** CLOCK_MONOTONIC µs, the clock of V8's CPU profiles (`--cpu-prof`) */
export const monotonicUs = (): number => Number(process.hrtime.bigint() / 1000n);

/** Read and write system calls a process has made (/proc/<pid>/io `syscr`, `syscw`: socket reads and writes included). */
export interface Syscalls {
  reads: number;
  writes: number;
}

export function syscalls(pid: number): Syscalls {
  const io = readFileSync(`/proc/${pid}/io`, "utf8");
  const field = (name: string) => Number(new RegExp(`^${name}: (\\d+)$`, "m").exec(io)?.[1] ?? Number.NaN);
  return { reads: field("syscr"), writes: field("syscw") };
}

export interface ThreadMark {
  atUs: number;
  main: Record<string, ThreadTimes>;
  byName: Record<string, Record<string, number>>;
  syscalls: Record<string, Syscalls>;
}

/** The start of a phase: the monotonic clock, each process's main-thread times and its threads' CPU by name. */
export function markThreads(pids: Record<string, number>): ThreadMark {
  return {
    atUs: monotonicUs(),
    main: threadSnapshot(pids),
    byName: Object.fromEntries(Object.entries(pids).map(([k, pid]) => [k, threadsByName(pid)])),
    syscalls: Object.fromEntries(Object.entries(pids).map(([k, pid]) => [k, syscalls(pid)])),
  };
}

/** From `mark` to now: the phase in monotonic µs, each main thread's times, each process's threads' CPU by name and its system calls. */
export function threadsSince(
  mark: ThreadMark,
  pids: Record<string, number>,
): {
  phase: { fromUs: number; toUs: number };
  mainThreads: Record<string, ThreadTimes>;
  byThread: Record<string, Record<string, number>>;
  syscalls: Record<string, Syscalls>;
} {
  const main = threadSnapshot(pids);
  const calls = Object.fromEntries(
    Object.entries(pids).map(([k, pid]) => {
      const [a, b] = [mark.syscalls[k], syscalls(pid)] as [Syscalls, Syscalls];
      return [k, { reads: b.reads - a.reads, writes: b.writes - a.writes }];
    }),
  );
  const byThread = Object.fromEntries(
    Object.entries(pids).map(([k, pid]) => {
      const before = mark.byName[k] ?? {};
      return [k, Object.fromEntries(Object.entries(threadsByName(pid)).map(([t, v]) => [t, v - (before[t] ?? 0)]))];
    }),
  );
  const mainThreads = Object.fromEntries(
    Object.keys(pids).map((k) => {
      const [a, b] = [mark.main[k], main[k]] as [ThreadTimes, ThreadTimes];
      return [k, { cpuS: b.cpuS - a.cpuS, runS: b.runS - a.runS, waitS: b.waitS - a.waitS }];
    }),
  );
  return { phase: { fromUs: mark.atUs, toUs: monotonicUs() }, mainThreads, byThread, syscalls: calls };
}
