/**
 * The one-at-a-time chain as redis-server sees it (`--timeline` of bench:blackbox). The
 * row's hops otherwise come from whole-ms marks the continuation carries; here a MONITOR
 * connection records when Redis started each command (its own clock, µs), and the
 * driver's send and invoke times (the same machine's clock) close the chain:
 *
 *   send → dedup         the producer's request reaches the API and its dedup step starts
 *   dedup → accept       dedupEvents, its round trip, then acceptEvents starts (appendEvents
 *                        where the matcher matches: the split roles, tracing on); ingest in
 *                        one step (a single Redis: ingestEvents, claimAppendEvents) marks
 *                        both with its one script, and this hop reads 0 (ingestDispatchEvents
 *                        marks the add too: the next hop reads 0 as well)
 *   accept → add         acceptEvents (append, match), its reply, the 202, the dispatcher's
 *                        hand-out, the job add (BullMQ's, or the dispatch step in one call),
 *                        until its script starts (after appendEvents: the matcher's read and
 *                        matchEvent come in between)
 *   add → taken          the host worker is woken (marker), and the script that takes the job
 *                        (its lock set: moveToActive, or a moveToFinished fetching the next) starts
 *   taken → invoked      that script, its reply, the host worker until the processor is called
 *
 * MONITOR makes Redis format every command for one more client: the chain is slower under
 * it, so it is measured on a row of its own (its send → invoked p50 printed beside it). The
 * monitor is a `redis-cli monitor` process writing to a file, read after the row, so that
 * its flood of lines takes nothing from the driver (the producer and the host worker).
 * Scripts are named by their SHA1 (redis-breakdown.ts).
 */
import { type ChildProcess, spawn } from "node:child_process";
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ACCEPT_JOBS_NAME, JOB_ADDS_NAME, nameOf, STEP_CALL_NAME } from "./redis-breakdown.js";
import { type Summary, summarize } from "./stats.js";
import { fmt, printTable } from "./table.js";

export const CHAIN_HOPS = ["send → dedup", "dedup → accept", "accept → add", "add → taken", "taken → invoked"] as const;
export type ChainHop = (typeof CHAIN_HOPS)[number];

type Step = "dedup" | "accept" | "add";
/** The script whose start marks steps of the chain before the job is taken (redis-breakdown's names). */
const STEPS_OF: Record<string, Step[]> = {
  dedupEvents: ["dedup"],
  acceptEvents: ["accept"],
  appendEvents: ["accept"],
  ingestEvents: ["dedup", "accept"],
  claimAppendEvents: ["dedup", "accept"],
  "bullmq addStandardJob": ["add"],
  [JOB_ADDS_NAME]: ["add"],
  [STEP_CALL_NAME]: ["add"],
  [ACCEPT_JOBS_NAME]: ["dedup", "accept", "add"],
};

/**
 * One event of the row: its ids, when Redis started each step of its chain (epoch ms, µs
 * precision; `taken` with the script that took the job), and the driver's send and invoke
 * times once it arrived.
 */
interface Row {
  eventId: string;
  waitId: string;
  dedup?: number;
  accept?: number;
  add?: number;
  taken?: { at: number; by: string };
  sent?: number;
  invoked?: number;
}

export interface ChainSummary {
  events: number;
  /** events whose four Redis marks were all seen */
  complete: number;
  hops: Record<ChainHop, Summary>;
  /** send → invoked of the monitored row */
  total: Summary;
  /** the scripts that took the jobs, with counts */
  takenBy: Record<string, number>;
  /**
   * the slowest 1 % of the complete events (at least one), slowest first: each hop's ms, and
   * when it was sent: s into the row, and ms into its second of the clock (work done once a
   * second, the AOF's fsync or the scheduler's sweep, would show as one ms of the second)
   */
  slowest: { total: number; hops: Record<ChainHop, number>; atS: number; msOfSecond: number }[];
}

/** The chain of one configuration's monitored row. */
export type Chain = ChainSummary & { config: string; tracing: string; unmonitoredP50: number | undefined };

export class RedisTimeline {
  readonly #redisUrl: string;
  #monitor: { child: ChildProcess; dir: string; file: string } | undefined;
  /** events begun whose job was not seen taken yet (the lines are read after the row: all of them, at first) */
  readonly #open: Row[] = [];
  /** the script running now: its start (ms) and name */
  #script: { at: number; name: string } = { at: 0, name: "" };
  readonly #rows: Row[] = [];

  constructor(redisUrl: string) {
    this.#redisUrl = redisUrl;
  }

  /** Starts `redis-cli monitor`, once it answered OK (it monitors from then on). */
  async start(): Promise<void> {
    const dir = mkdtempSync(join(tmpdir(), "rdv-timeline-"));
    const file = join(dir, "monitor.txt");
    const out = openSync(file, "w");
    const child = spawn("redis-cli", ["-u", this.#redisUrl, "monitor"], { stdio: ["ignore", out, "inherit"] });
    closeSync(out);
    this.#monitor = { child, dir, file };
    const limit = Date.now() + 5000;
    while (!readFileSync(file, "utf8").startsWith("OK")) {
      if (Date.now() > limit || child.exitCode !== null) throw new Error("redis-cli monitor did not start");
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  /** The next event's ids, before it is sent; returns its row for `end`. */
  begin(eventId: string, waitId: string): Row {
    const row: Row = { eventId, waitId };
    this.#rows.push(row);
    this.#open.push(row);
    return row;
  }

  /** Its continuation arrived: `sent` and `invoked` are epoch ms of the driver's clock. */
  end(row: Row, sent: number, invoked: number): void {
    row.sent = sent;
    row.invoked = invoked;
  }

  /** Stops the monitor (after the lines of the last event are written) and reads what it wrote. */
  async stop(): Promise<void> {
    const m = this.#monitor;
    if (!m) return;
    this.#monitor = undefined;
    await new Promise((r) => setTimeout(r, 200));
    const exited = new Promise((r) => m.child.once("exit", r));
    m.child.kill("SIGTERM");
    await exited;
    try {
      for (const line of readFileSync(m.file, "utf8").split("\n")) {
        // 1796311525.945763 [0 127.0.0.1:35988] "evalsha" "…" …   (a script's commands: [0 lua])
        const open = line.indexOf(" [");
        const close = line.indexOf("] ", open);
        if (open < 0 || close < 0) continue;
        const source = line.slice(open + 2, close).split(" ")[1] ?? "";
        const args = [...line.slice(close + 2).matchAll(/"((?:[^"\\]|\\.)*)"/g)].map((x) => x[1] as string);
        this.#line(Number(line.slice(0, open)) * 1000, args, source);
      }
    } finally {
      rmSync(m.dir, { recursive: true, force: true });
    }
  }

  #line(at: number, args: string[], source: string): void {
    if (source !== "lua") {
      const name = nameOf(args).name;
      this.#script = { at, name };
      const steps = STEPS_OF[name];
      if (!steps) return;
      const step = steps[0] as Step;
      // one at a time, a step's line is the oldest open event's that lacks it: the first few are
      // tried (one whose line went missing is passed over, not waited on for ever)
      let tried = 0;
      for (const e of this.#open) {
        if (e[step] !== undefined) continue;
        // (an event key is packed length-prefixed: "12:e-…-1" is not found in "13:e-…-10")
        const id = step === "add" ? e.waitId : `${e.eventId.length}:${e.eventId}`;
        if (args.some((a) => a.includes(id))) {
          for (const s of steps) e[s] = at;
          break;
        }
        if (++tried === 4) break;
      }
      return;
    }
    // inside a script: the job's lock is set by the script that takes it
    if (args[0]?.toUpperCase() !== "SET") return;
    const key = args[1] ?? "";
    const i = this.#open.findIndex((e) => key.endsWith(`:${e.waitId}:lock`));
    const e = this.#open[i];
    if (!e) return;
    e.taken = { at: this.#script.at, by: this.#script.name };
    // (the last mark of an event's chain)
    this.#open.splice(i, 1);
  }

  summary(): ChainSummary {
    const hops = Object.fromEntries(CHAIN_HOPS.map((h) => [h, [] as number[]])) as Record<ChainHop, number[]>;
    const takenBy: Record<string, number> = {};
    const each: ChainSummary["slowest"] = [];
    const first = this.#rows[0]?.sent ?? 0;
    for (const { dedup, accept, add, taken, sent, invoked } of this.#rows) {
      if (sent === undefined || invoked === undefined) continue;
      if (dedup === undefined || accept === undefined || add === undefined || taken === undefined) continue;
      const event: Record<ChainHop, number> = {
        "send → dedup": dedup - sent,
        "dedup → accept": accept - dedup,
        "accept → add": add - accept,
        "add → taken": taken.at - add,
        "taken → invoked": invoked - taken.at,
      };
      for (const h of CHAIN_HOPS) hops[h].push(event[h]);
      each.push({
        total: invoked - sent,
        hops: event,
        atS: (sent - first) / 1000,
        msOfSecond: Math.floor(sent % 1000),
      });
      takenBy[taken.by] = (takenBy[taken.by] ?? 0) + 1;
    }
    const complete = each.length;
    const slowest = each.sort((a, b) => b.total - a.total).slice(0, Math.max(1, Math.ceil(complete / 100)));
    return {
      events: this.#rows.length,
      complete,
      hops: Object.fromEntries(CHAIN_HOPS.map((h) => [h, summarize(hops[h])])) as Record<ChainHop, Summary>,
      total: summarize(
        this.#rows.flatMap((r) => (r.sent !== undefined && r.invoked !== undefined ? [r.invoked - r.sent] : [])),
      ),
      takenBy,
      slowest,
    };
  }
}

/** The chain table: each hop's mean / p50 / p99 (ms), then what took the jobs. */
export function printChain(c: Chain): void {
  const ms = (v: number) => v.toFixed(3);
  const row = (name: string, x: Summary) => [name, ms(x.mean), ms(x.p50), ms(x.p99)];
  printTable(
    `one at a time, the chain as Redis saw it (--timeline, MONITOR on; ${c.config}, tracing ${c.tracing}): ${fmt(c.complete)} of ${fmt(c.events)} events with every mark; ms`,
    ["hop", "mean", "p50", "p99"],
    [...CHAIN_HOPS.map((h) => row(h, c.hops[h])), row("send → invoked", c.total)],
  );
  if (c.slowest.length > 0) {
    // where a tail event lost its time: one hop, or spread over several
    printTable(
      `the slowest 1 % of them (${fmt(c.slowest.length)}), each hop; ms`,
      ["send → invoked", ...CHAIN_HOPS, "sent at s", "ms of its second"],
      c.slowest.map((e) => [ms(e.total), ...CHAIN_HOPS.map((h) => ms(e.hops[h])), e.atS.toFixed(2), e.msOfSecond]),
    );
  }
  const taken = Object.entries(c.takenBy)
    .map(([k, v]) => `${k} ${fmt(v)}`)
    .join(", ");
  const unmonitored = c.unmonitoredP50 === undefined ? "?" : ms(c.unmonitoredP50);
  console.log(`jobs taken by: ${taken}; the same row without MONITOR: p50 ${unmonitored} ms`);
}
