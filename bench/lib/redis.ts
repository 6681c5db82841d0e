/**
 * The benchmark's private redis-server (AOF on, appendfsync everysec, a free port,
 * never 6379) and what the benchmarks read from it: INFO fields, command statistics
 * and CPU time between two points, MEMORY USAGE of key sets.
 */
import { type RedisServer, startRedisServer } from "@rendezvous/engine";
import type { Redis } from "ioredis";
import { progress } from "./table.js";

export type { RedisServer };

/** Starts the private server and stops it on exit, on Ctrl-C and after `maxMs` (a watchdog). */
export async function startBenchRedis(maxMs: number, fsync: "everysec" | "always" = "everysec"): Promise<RedisServer> {
  const server = await startRedisServer({ aof: true, fsync });
  progress(`redis-server pid ${server.pid} on ${server.url} (appendonly yes, appendfsync ${fsync})`);
  const kill = () => {
    try {
      process.kill(server.pid, "SIGKILL");
    } catch {
      // already gone
    }
  };
  process.once("exit", kill);
  for (const signal of ["SIGINT", "SIGTERM"] as const) {
    process.once(signal, () => {
      kill();
      process.exit(130);
    });
  }
  const watchdog = setTimeout(() => {
    console.error(`benchmark exceeded its time bound of ${Math.round(maxMs / 1000)} s: stopping`);
    kill();
    process.exit(2);
  }, maxMs);
  watchdog.unref();
  return server;
}

/** INFO <section> as a map. */
export async function info(redis: Redis, section: string): Promise<Map<string, string>> {
  const text = await redis.info(section);
  const out = new Map<string, string>();
  for (const line of text.split("\r\n")) {
    const i = line.indexOf(":");
    if (i > 0 && !line.startsWith("#")) out.set(line.slice(0, i), line.slice(i + 1));
  }
  return out;
}

export async function usedMemory(redis: Redis): Promise<number> {
  return Number((await info(redis, "memory")).get("used_memory"));
}

export interface CommandStat {
  calls: number;
  usec: number;
}

async function commandStats(redis: Redis): Promise<Map<string, CommandStat>> {
  const out = new Map<string, CommandStat>();
  for (const [k, v] of await info(redis, "commandstats")) {
    const calls = /calls=(\d+)/.exec(v);
    const usec = /usec=(\d+)/.exec(v);
    out.set(k.replace(/^cmdstat_/, ""), { calls: Number(calls?.[1] ?? 0), usec: Number(usec?.[1] ?? 0) });
  }
  return out;
}

async function redisCpu(redis: Redis): Promise<number> {
  const cpu = await info(redis, "cpu");
  return Number(cpu.get("used_cpu_user") ?? 0) + Number(cpu.get("used_cpu_sys") ?? 0);
}

export interface Window {
  wallMs: number;
  /** redis-server CPU seconds / wall seconds (1.0 = one core busy) */
  redisCpu: number;
  /** this process's CPU seconds / wall seconds */
  nodeCpu: number;
  /** commands by server time spent, most first */
  commands: Array<{ command: string; calls: number; usec: number; usecPerCall: number }>;
}

/** Starts a measurement window: call the returned function to close it. */
export async function openWindow(redis: Redis): Promise<() => Promise<Window>> {
  const [stats0, cpu0] = [await commandStats(redis), await redisCpu(redis)];
  const node0 = process.cpuUsage();
  const t0 = performance.now();
  return async () => {
    const wallMs = performance.now() - t0;
    const node = process.cpuUsage(node0);
    const [stats1, cpu1] = [await commandStats(redis), await redisCpu(redis)];
    const commands = [...stats1]
      .map(([command, s]) => {
        const before = stats0.get(command) ?? { calls: 0, usec: 0 };
        const calls = s.calls - before.calls;
        const usec = s.usec - before.usec;
        return { command, calls, usec, usecPerCall: calls > 0 ? usec / calls : 0 };
      })
      .filter((c) => c.calls > 0 && c.command !== "info")
      .sort((a, b) => b.usec - a.usec);
    return {
      wallMs,
      redisCpu: (cpu1 - cpu0) / (wallMs / 1000),
      nodeCpu: (node.user + node.system) / 1000 / wallMs,
      commands,
    };
  };
}

/** Every key matching `pattern` (SCAN). */
export async function scanKeys(redis: Redis, pattern: string): Promise<string[]> {
  const keys: string[] = [];
  let cursor = "0";
  do {
    const [next, batch] = await redis.scan(cursor, "MATCH", pattern, "COUNT", 1000);
    cursor = next;
    keys.push(...batch);
  } while (cursor !== "0");
  return keys;
}

/** MEMORY USAGE (exact: SAMPLES 0) of each key, summed. */
export async function memoryUsage(redis: Redis, keys: string[]): Promise<number> {
  if (keys.length === 0) return 0;
  const pipeline = redis.pipeline();
  for (const k of keys) pipeline.call("MEMORY", "USAGE", k, "SAMPLES", "0");
  const results = (await pipeline.exec()) ?? [];
  return results.reduce((sum, [err, v]) => (err ? sum : sum + Number(v ?? 0)), 0);
}

/** Waits until the server has no AOF rewrite running (a rewrite skews memory and CPU). */
export async function quiesce(redis: Redis): Promise<void> {
  for (let i = 0; i < 200; i++) {
    const p = await info(redis, "persistence");
    if (p.get("aof_rewrite_in_progress") === "0" && p.get("aof_rewrite_scheduled") === "0") return;
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** An AOF rewrite seen by `watchAofRewrites`: when it began and ended (epoch ms, this process's clock). */
export interface RewriteWindow {
  start: number;
  end: number;
}

/**
 * Polls `INFO persistence` every `everyMs` on `redis` and records when AOF rewrites run.
 * A rewrite forks redis-server: while the child writes the new file, every page the
 * server writes is copied first, so writes cost several times as much (timeouts measured
 * 35–170 ms per step of 50 during one on a 2-core VM, 2–5 ms outside). Call the returned
 * function to stop; it answers the windows (one still running ends then).
 */
export function watchAofRewrites(redis: Redis, everyMs = 50): () => Promise<RewriteWindow[]> {
  const windows: RewriteWindow[] = [];
  let open: number | null = null;
  let polling: Promise<void> = Promise.resolve();
  const poll = async () => {
    const p = await info(redis, "persistence");
    const running = p.get("aof_rewrite_in_progress") === "1";
    const now = Date.now();
    if (running && open === null) open = now;
    if (!running && open !== null) {
      windows.push({ start: open, end: now });
      open = null;
    }
  };
  const timer = setInterval(() => {
    polling = polling.then(poll).catch(() => undefined);
  }, everyMs);
  return async () => {
    clearInterval(timer);
    await polling;
    if (open !== null) windows.push({ start: open, end: Date.now() });
    return windows;
  };
}

/**
 * A PING every `everyMs` on a connection of its own: its round-trip times show when
 * Redis (or this process's event loop) stalls. Call the returned function to stop.
 */
export async function startPingProbe(url: string, everyMs = 5): Promise<() => Promise<number[]>> {
  const { Redis } = await import("ioredis");
  const conn = new Redis(url, { connectionName: "bench:probe", enableAutoPipelining: false });
  const rtts: number[] = [];
  let running = true;
  const loop = (async () => {
    while (running) {
      const t0 = performance.now();
      await conn.ping();
      rtts.push(performance.now() - t0);
      await new Promise((r) => setTimeout(r, everyMs));
    }
  })();
  return async () => {
    running = false;
    await loop;
    await conn.quit();
    return rtts;
  };
}
