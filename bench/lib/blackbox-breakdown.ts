/**
 * Where the CPU of a black-box row goes (bench:blackbox `--breakdown`, `--profile`): Redis's
 * own time per command and script and client process (bench/lib/redis-breakdown.ts), and the
 * product processes' self time by category of code (bench/lib/cpu-profile.ts), both per
 * resolved event, and the tables that print them.
 */
import type { Configuration, LatencyRow, ThroughputRow } from "./blackbox-report.js";
import { type ProfileSummary, profileFile, summarizeProfile } from "./cpu-profile.js";
import type { RoleProcess } from "./product.js";
import type { RedisBreakdown } from "./redis-breakdown.js";
import { fmt, pct, printTable, progress } from "./table.js";

/**
 * The row `--profile` profiles: one event per request or batches (BullMQ worker), the HTTP
 * claim row, or `one`: the BullMQ worker's one-at-a-time row (its events' chains, one after another).
 */
export type ProfiledRow = "single" | "batch" | "http" | "one";

export interface ProcessProfile {
  config: string;
  row: ProfiledRow;
  /** the role process profiled */
  process: string;
  events: number;
  /** the process's /proc CPU over the same phase, ms (every thread; the profile samples the main one) */
  procMs: number;
  /** its main thread's time on CPU over the phase, ms (schedstat) */
  mainMs: number;
  /** its profiler's own thread (v8:ProfEvntProc) over the phase, ms */
  profilerMs: number;
  summary: ProfileSummary;
}

/** A throughput row's identity and its Redis figures, as the breakdown tables need them. */
export interface BrokenDownRow {
  label: string;
  events: number;
  /** redis-server µs per event from /proc */
  redisCpu: number;
  /** redis-server's main thread over the phase: s of CPU (stat), on CPU and runnable but waiting (schedstat) */
  redisMain: { cpuS: number; runS: number; waitS: number };
  breakdown: RedisBreakdown;
}

const per = (usec: number, n: number) => usec / n;

export function printRedisBreakdown(row: BrokenDownRow): void {
  const b = row.breakdown;
  const n = row.events;
  // Redis's µs are wall time: on a busy machine a command that is preempted counts the time it
  // waited for a core. The main thread runs the commands, the event loop and the I/O; over the
  // phase it ran `runS` and waited runnable `waitS`, so its commands ran about f = run / (run + wait)
  // of their wall time on a core (the waits fall on whatever it was doing).
  const m = row.redisMain;
  const f = m.runS + m.waitS > 0 ? m.runS / (m.runS + m.waitS) : 1;
  const mainUs = (m.runS * 1e6) / n;
  const shown = b.units.filter((u, i) => i < 30 && per(u.usec, n) >= 0.5);
  const rest = b.units.slice(shown.length);
  const restUsec = rest.reduce((s, u) => s + u.usec, 0);
  const own = per(b.usec, n);
  const d = (usec: number) => fmt(usec, 1);
  printTable(
    `Redis, its own time per command and script: ${row.label}; µs per resolved event (on CPU ≈ wall × ${f.toFixed(2)})`,
    [
      "process",
      "step",
      "command or script",
      "calls/event",
      "µs wall",
      "µs on CPU",
      "of it: commands inside",
      "Lua & rest",
      "share",
    ],
    [
      ...shown.map((u) => [
        u.process,
        u.step,
        u.name,
        (u.calls / n).toFixed(2),
        d(per(u.usec, n)),
        d(per(u.usec, n) * f),
        u.innerUsec > 0 ? d(per(u.innerUsec, n) * f) : "",
        u.innerUsec > 0 ? d(per(u.usec - u.innerUsec, n) * f) : "",
        pct(u.usec / b.usec),
      ]),
      ...(rest.length > 0
        ? [
            [
              "",
              "",
              `${rest.length} more`,
              "",
              d(per(restUsec, n)),
              d(per(restUsec, n) * f),
              "",
              "",
              pct(restUsec / b.usec),
            ],
          ]
        : []),
      ["", "", "Redis's own time: every command once (commandstats' usec)", "", d(own), d(own * f), "", "", ""],
      ["", "", "redis-server main thread on CPU (schedstat)", "", "", d(mainUs), "", "", ""],
      ["", "", "  I/O and event loop: main thread − own time", "", "", d(mainUs - own * f), "", "", ""],
      ["", "", "redis-server, every thread, user + sys (/proc)", "", "", d(row.redisCpu), "", "", ""],
      [
        "",
        "",
        "  other threads (AOF fsync, bio): /proc − main",
        "",
        "",
        d(row.redisCpu - (m.cpuS * 1e6) / n),
        "",
        "",
        "",
      ],
    ],
  );
  console.log(
    `redis-server's main thread over the phase: ${fmt(m.runS * 1000, 1)} ms on CPU, ${fmt(m.waitS * 1000, 1)} ms runnable but waiting for a core (f = ${f.toFixed(2)}); user + sys ${fmt(m.cpuS * 1000, 1)} ms (ticks)`,
  );
  // the same time by client process and step
  const roll = new Map<string, number>();
  for (const u of b.units) {
    const k = `${u.process}\u0000${u.step || "other commands"}`;
    roll.set(k, (roll.get(k) ?? 0) + u.usec);
  }
  printTable(
    `  by client process and step: ${row.label}`,
    ["process", "step", "µs on CPU per event", "share"],
    [...roll]
      .sort((a, b2) => b2[1] - a[1])
      .map(([k, usec]) => {
        const [process, step] = k.split("\u0000") as [string, string];
        return [process, step, fmt(per(usec, n) * f, 1), pct(usec / b.usec)];
      }),
  );
  const full = b.entries >= b.maxLen ? ` — the SLOWLOG was full (${fmt(b.entries)}): raise --events' slack` : "";
  console.log(
    `logged commands' time ${fmt(b.loggedUsec / 1000, 1)} ms against commandstats' ${fmt(b.commandstatsUsec / 1000, 1)} ms over the phase (${pct(b.loggedUsec / b.commandstatsUsec)}; both count a script's commands again)${full}`,
  );
}

export function printProfiles(profiles: ProcessProfile[]): void {
  for (const p of profiles) {
    const s = p.summary;
    const busy = s.categories.filter((c) => c.category !== "idle").reduce((sum, c) => sum + c.ms, 0);
    // samples are wall-time apart: a share of the busy samples is a share of the main thread's CPU
    const us = (ms: number) => fmt(busy > 0 ? ((ms / busy) * p.mainMs * 1000) / p.events : 0, 1);
    printTable(
      `${p.config} / ${p.process}: self time by category over the ${p.row} row's event phase (${fmt(s.samples)} samples); µs of main-thread CPU per resolved event`,
      ["category", "of busy samples", "µs/event"],
      [
        ...s.categories.filter((c) => c.category !== "idle").map((c) => [c.category, pct(c.ms / busy), us(c.ms)]),
        ["main thread on CPU (schedstat)", "", fmt((p.mainMs * 1000) / p.events, 1)],
        ["the profiler's own thread (v8:ProfEvntProc)", "", fmt((p.profilerMs * 1000) / p.events, 1)],
        [
          "other threads (GC helpers, compiler, libuv): /proc − main − profiler",
          "",
          fmt(((p.procMs - p.mainMs - p.profilerMs) * 1000) / p.events, 1),
        ],
        ["process, every thread, user + sys (/proc)", "", fmt((p.procMs * 1000) / p.events, 1)],
      ],
    );
    console.log(
      `${p.config} / ${p.process}: ${fmt(busy, 1)} ms of busy samples, ${fmt(s.categories.find((c) => c.category === "idle")?.ms ?? 0, 1)} ms idle, ${fmt(p.mainMs, 1)} ms main thread on CPU`,
    );
    printTable(
      `  ${p.config} / ${p.process}: the functions with the most self time`,
      ["function", "where", "category", "µs/event"],
      s.top.slice(0, 15).map((f) => [f.fn, f.where, f.category, us(f.ms)]),
    );
  }
}

/** CPU per event of each process's threads by name over each row's event phase (main thread apart). */
export function printThreads(
  rows: Array<{
    config: string;
    producers: string;
    transport: string;
    events: number;
    byThread: Record<string, Record<string, number>>;
  }>,
): void {
  const names = [...new Set(rows.flatMap((r) => Object.values(r.byThread).flatMap((t) => Object.keys(t))))];
  names.sort((a, b) => (a === "main" ? -1 : b === "main" ? 1 : a.localeCompare(b)));
  printTable(
    "CPU µs per resolved event by thread (/proc/<pid>/task: main thread, then by thread name)",
    ["config", "row", "process", ...names],
    rows.flatMap((r) =>
      Object.entries(r.byThread).map(([process, t]) => [
        r.config,
        `${r.producers}, ${r.transport}`,
        process,
        ...names.map((n) => (t[n] === undefined ? "" : fmt(((t[n] as number) * 1e6) / r.events, 1))),
      ]),
    ),
  );
}

/** Read and write system calls per event of each process over each row's event phase: the I/O the row's CPU pays for. */
export function printSyscalls(
  rows: Array<Pick<ThroughputRow, "config" | "producers" | "transport" | "events" | "syscalls">>,
): void {
  const per = (v: number, n: number) => fmt(v / n, 2);
  printTable(
    "system calls per resolved event (/proc/<pid>/io syscr + syscw: reads and writes, sockets included)",
    ["config", "row", "process", "reads", "writes"],
    rows.flatMap((r) =>
      Object.entries(r.syscalls).map(([process, c]) => [
        r.config,
        `${r.producers}, ${r.transport}`,
        process,
        per(c.reads, r.events),
        per(c.writes, r.events),
      ]),
    ),
  );
}

/** Each role's profile (written as it exited on SIGTERM) over the event phase of the row `which`. */
export function profilesOf(
  config: Configuration,
  which: ProfiledRow,
  throughput: ThroughputRow[],
  latency: LatencyRow[],
  roles: RoleProcess[],
  profDir: string,
): ProcessProfile[] {
  const row = which === "one" ? oneAtATime(latency) : throughputOf(which, throughput);
  if (!row) return [];
  return roles.flatMap((r) => {
    const file = profileFile(profDir, r.pid);
    if (!file) {
      progress(`${config}: no CPU profile from ${r.name} (pid ${r.pid}) in ${profDir}`);
      return [];
    }
    // (the results file keeps the first 60 functions; the table prints 15)
    const summary = summarizeProfile(file, row.phase.fromUs, row.phase.toUs, 60);
    const procMs = ((row.cpu.byProcess[r.name] ?? 0) * row.events) / 1000;
    const mainMs = (row.mainThreads[r.name]?.runS ?? 0) * 1000;
    const profilerMs = (row.byThread[r.name]?.["v8:ProfEvntProc"] ?? 0) * 1000;
    return [{ config, row: which, process: r.name, events: row.events, procMs, mainMs, profilerMs, summary }];
  });
}

type Profiled = Pick<ThroughputRow, "events" | "phase" | "mainThreads" | "byThread"> & {
  cpu: { byProcess: Record<string, number> };
};

function throughputOf(which: ProfiledRow, throughput: ThroughputRow[]): Profiled | undefined {
  return throughput.find((t) =>
    which === "http" ? t.transport === "http" : t.transport === "bullmq" && t.producers === which,
  );
}

/** The BullMQ one-at-a-time row as a profiled row (its CPU per event by process: the product's only). */
function oneAtATime(latency: LatencyRow[]): Profiled | undefined {
  const row = latency.find((l) => l.transport === "bullmq" && l.phase);
  if (!row?.phase || !row.mainThreads || !row.byThread || !row.cpu) return undefined;
  return {
    events: row.latency.count,
    phase: row.phase,
    mainThreads: row.mainThreads,
    byThread: row.byThread,
    cpu: { byProcess: row.cpu.byProcess ?? {} },
  };
}
