/**
 * Where redis-server's time goes over one phase of a benchmark, per command and per script,
 * per client process (`--breakdown` of bench:blackbox).
 *
 * `INFO commandstats` has one line for EVALSHA (every script together) and counts the
 * commands a script or a MULTI runs inside it a second time under their own names. So for
 * the phase the SLOWLOG records every command (`slowlog-log-slower-than 0`): name, arguments
 * (an EVALSHA's first is its SHA1), client address and Redis's own µs, the same duration
 * commandstats adds up. A command run by a script is logged before the script (by the
 * script's client, address `?:0`), one run by EXEC between the client's MULTI and its EXEC;
 * EXEC is not logged (Redis logs each command of the transaction instead). The phase's
 * commands are laid out as top-level units (a command, a script with the commands inside
 * it, each command of a MULTI block), none counted twice.
 * SHA1s are named from the product's scripts (`luaScripts`) and BullMQ's (`bullmq/dist/cjs/scripts`);
 * client addresses are matched to processes by their socket inodes (/proc/<pid>/fd, /proc/net/tcp).
 * Redis's own µs exclude reading, parsing and answering requests and the event loop: the
 * remainder of redis-server's /proc CPU over the same phase.
 * Logging every command costs redis-server some CPU of its own: that is in the remainder too.
 */
import { createHash } from "node:crypto";
import { readdirSync, readFileSync, readlinkSync } from "node:fs";
import { createRequire } from "node:module";
import { luaScripts, prefixedScript } from "@rendezvous/engine";
import { ADD_ONE, JOB_ADDS_LUA, STEP_LUA } from "@rendezvous/workers";
import type { Redis } from "ioredis";
import { info } from "./redis.js";

/** One top-level unit of the phase, summed over its calls. */
export interface UnitStat {
  /** client process (a role, `driver`, or `?` when the address was not matched) */
  process: string;
  /** step of the resolve path the unit belongs to, from its name */
  step: string;
  /** a script's name, or a command (XREADGROUP and XACK with their consumer group) */
  name: string;
  calls: number;
  /** Redis's own µs, inclusive of the commands run inside it */
  usec: number;
  /** of `usec`, the µs of the commands a script ran (the rest is Lua and argument handling) */
  innerUsec: number;
}

export interface RedisBreakdown {
  units: UnitStat[];
  /** sum of the units' µs (each command once) */
  usec: number;
  /** µs of every command in the phase from commandstats (nested ones counted again), and the same from the log */
  commandstatsUsec: number;
  loggedUsec: number;
  /** entries the SLOWLOG held at the end against its length: equal means some were dropped */
  entries: number;
  maxLen: number;
}

/** The names of the workers' scripts that run BullMQ's job adds (job-adds.ts), as this file prints them. */
export const JOB_ADDS_NAME = "bullmq addStandardJob, a step's jobs in one call";
export const STEP_CALL_NAME = "dispatch step in one call (jobs, continuation_dispatched, ack)";
export const ACCEPT_JOBS_NAME = "ingestDispatchEvents (claims, append, match, the jobs)";

const ourStep: Record<string, string> = {
  dedupEvents: "ingest",
  appendEvents: "ingest",
  claimAppendEvents: "ingest",
  acceptEvents: "ingest + match",
  ingestEvents: "ingest + match",
  takeQuota: "ingest (quota)",
  recordRejection: "ingest",
  matchEvent: "match",
  annotateWait: "dispatch",
  annotateWaits: "dispatch",
  consumeWait: "consume",
  registerWait: "register",
  claimRunPosition: "register",
  heartbeatWait: "heartbeat",
};

interface Known {
  name: string;
  step: string;
}

let shas: Map<string, Known> | undefined;
let prefixes: Array<[string, Known]> | undefined;

/** SHA1 → script, and the first 100 characters of each body (an EVAL's logged argument is cut at 128). */
function knownScripts(): { shas: Map<string, Known>; prefixes: Array<[string, Known]> } {
  if (shas && prefixes) return { shas, prefixes };
  const bull = createRequire(import.meta.url)("bullmq/dist/cjs/scripts/index.js") as Record<
    string,
    { name: string; content: string }
  >;
  const all: Array<[string, Known]> = [
    ...Object.entries(luaScripts).map(([name, def]): [string, Known] => [
      def.lua,
      { name, step: ourStep[name] ?? "engine" },
    ]),
    ...Object.values(bull).map((s): [string, Known] => [s.content, { name: `bullmq ${s.name}`, step: "BullMQ" }]),
    [JOB_ADDS_LUA, { name: JOB_ADDS_NAME, step: "BullMQ" }],
    [STEP_LUA, { name: STEP_CALL_NAME, step: "dispatch" }],
    // (loaded with BullMQ's addStandardJob before it, as the engine composes it)
    [prefixedScript("ingestDispatchEvents", ADD_ONE).lua, { name: ACCEPT_JOBS_NAME, step: "ingest + match + jobs" }],
  ];
  shas = new Map(all.map(([lua, k]) => [createHash("sha1").update(lua).digest("hex"), k]));
  prefixes = all.map(([lua, k]) => [lua.slice(0, 100), k]);
  return { shas, prefixes };
}

export function nameOf(args: string[]): Known {
  const cmd = (args[0] ?? "?").toLowerCase();
  const { shas, prefixes } = knownScripts();
  if (cmd === "evalsha" || cmd === "evalsha_ro") {
    return shas.get((args[1] ?? "").toLowerCase()) ?? { name: `EVALSHA ${(args[1] ?? "").slice(0, 8)}…`, step: "?" };
  }
  if (cmd === "eval" || cmd === "eval_ro") {
    const body = args[1] ?? "";
    const k = prefixes.find(([p]) => body.startsWith(p))?.[1];
    return k ? { name: `${k.name} (EVAL)`, step: k.step } : { name: "EVAL ?", step: "?" };
  }
  // XREADGROUP GROUP <group> …; XACK <key> <group> …
  if (cmd === "xreadgroup") return { name: `XREADGROUP ${args[2] ?? ""}`, step: "streams" };
  if (cmd === "xack") return { name: `XACK ${args[2] ?? ""}`, step: "streams" };
  return { name: cmd.toUpperCase(), step: "" };
}

/** Local port of each TCP connection to `redisPort` → the name of the process holding it. */
export function socketOwners(pids: Record<string, number>, redisPort: number): Map<number, string> {
  const inodeOwner = new Map<string, string>();
  for (const [name, pid] of Object.entries(pids)) {
    let fds: string[] = [];
    try {
      fds = readdirSync(`/proc/${pid}/fd`);
    } catch {
      continue;
    }
    for (const fd of fds) {
      try {
        const m = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`));
        if (m) inodeOwner.set(m[1] as string, name);
      } catch {
        // closed meanwhile
      }
    }
  }
  const out = new Map<number, string>();
  for (const file of ["/proc/net/tcp", "/proc/net/tcp6"]) {
    let text = "";
    try {
      text = readFileSync(file, "utf8");
    } catch {
      continue;
    }
    for (const line of text.split("\n").slice(1)) {
      const f = line.trim().split(/\s+/);
      const local = f[1];
      const remote = f[2];
      const owner = inodeOwner.get(f[9] ?? "");
      if (!local || !remote || !owner) continue;
      if (Number.parseInt(remote.split(":")[1] ?? "", 16) !== redisPort) continue;
      out.set(Number.parseInt(local.split(":")[1] ?? "", 16), owner);
    }
  }
  return out;
}

async function commandstatsUsec(redis: Redis): Promise<number> {
  let sum = 0;
  for (const [k, v] of await info(redis, "commandstats")) {
    // EXEC counts its commands again and is not in the SLOWLOG: left out, like the bench's own
    if (/^cmdstat_(info|slowlog|config|exec)/.test(k)) continue;
    sum += Number(/usec=(\d+)/.exec(v)?.[1] ?? 0);
  }
  return sum;
}

/** Starts logging every command on `redis`'s server; the returned function ends the phase and lays it out. */
export async function startBreakdown(
  redis: Redis,
  maxLen: number,
): Promise<(owners: Map<number, string>) => Promise<RedisBreakdown>> {
  const [, threshold] = (await redis.config("GET", "slowlog-log-slower-than")) as [string, string];
  const [, len] = (await redis.config("GET", "slowlog-max-len")) as [string, string];
  await redis.config("SET", "slowlog-max-len", String(maxLen));
  await redis.call("SLOWLOG", "RESET");
  const stats0 = await commandstatsUsec(redis);
  await redis.config("SET", "slowlog-log-slower-than", "0");
  return async (owners) => {
    await redis.config("SET", "slowlog-log-slower-than", threshold);
    const stats1 = await commandstatsUsec(redis);
    const log = (await redis.call("SLOWLOG", "GET", "-1")) as Array<[number, number, number, string[], string, string]>;
    await redis.call("SLOWLOG", "RESET");
    await redis.config("SET", "slowlog-max-len", len);
    return { ...layOut(log.reverse(), owners), commandstatsUsec: stats1 - stats0, entries: log.length, maxLen };
  };
}

/** The units of a chronological log (see the header). */
export function layOut(
  log: Array<[number, number, number, string[], string, string]>,
  owners: Map<number, string>,
): Omit<RedisBreakdown, "commandstatsUsec" | "entries" | "maxLen"> {
  const units = new Map<string, UnitStat>();
  let loggedUsec = 0;
  let scriptInner = 0;
  const add = (peer: string, args: string[], usec: number, inner: number) => {
    const port = Number(peer.slice(peer.lastIndexOf(":") + 1));
    const process = owners.get(port) ?? "?";
    const k = nameOf(args);
    const name = k.name;
    const key = `${process}\u0000${name}`;
    const u = units.get(key) ?? { process, step: k.step, name, calls: 0, usec: 0, innerUsec: 0 };
    u.calls++;
    u.usec += usec;
    u.innerUsec += inner;
    units.set(key, u);
  };
  for (const [, , usec, args, peer] of log) {
    const cmd = (args[0] ?? "").toLowerCase();
    if (cmd === "slowlog" || cmd === "config") continue;
    loggedUsec += usec;
    // a command a script ran: counted inside the script logged next
    if (peer === "?:0" || peer === "") {
      scriptInner += usec;
      continue;
    }
    const script = cmd.startsWith("eval") || cmd.startsWith("fcall");
    const inner = script ? scriptInner : 0;
    if (script) scriptInner = 0;
    add(peer, args, usec, inner);
  }
  const list = [...units.values()].sort((a, b) => b.usec - a.usec);
  return { units: list, usec: list.reduce((s, u) => s + u.usec, 0), loggedUsec };
}
