/**
 * The raw-Redis ceiling every throughput is compared with: one ioredis client,
 * 64 calls in flight, each an EVALSHA of a 4-command Lua script (INCR, HSET, ZADD,
 * XADD on keys of one hash tag). It is what one connection to this Redis, on this
 * machine, can do with small atomic scripts and no application logic.
 *
 * RESOLVE_CEILING is the resolve path's variant (HGET, HSET, XADD MAXLEN ~, ZREM: read a
 * record, write it, append to a stream, leave an index), the black-box benchmark's
 * (bench/suites/blackbox.ts) reference.
 */
import { Redis } from "ioredis";
import { progress } from "./table.js";

const SCRIPT = `
redis.call("INCR", KEYS[1])
redis.call("HSET", KEYS[2], ARGV[1], ARGV[2])
redis.call("ZADD", KEYS[3], ARGV[3], ARGV[1])
redis.call("XADD", KEYS[4], "MAXLEN", "~", "10000", "*", "k", ARGV[1])
return 1`;

/** A ceiling script of 4 keys and the ARGV of its call number `i` on hash field `field`. */
export interface CeilingScript {
  lua: string;
  argv(field: string, payload: string, i: number): string[];
}

const STORE_PATH: CeilingScript = { lua: SCRIPT, argv: (field, payload, i) => [field, payload, String(i)] };

export const RESOLVE_CEILING: CeilingScript = {
  lua: `
redis.call("HGET", KEYS[2], ARGV[1])
redis.call("HSET", KEYS[2], ARGV[1], ARGV[2])
redis.call("XADD", KEYS[4], "MAXLEN", "~", "10000", "*", "k", ARGV[1])
redis.call("ZREM", KEYS[3], ARGV[1])
return 1`,
  argv: (field, payload) => [field, payload],
};

export interface Ceiling {
  callsPerSec: number;
  calls: number;
  seconds: number;
  inFlight: number;
}

export async function measureCeiling(
  url: string,
  seconds: number,
  inFlight = 64,
  script: CeilingScript = STORE_PATH,
): Promise<Ceiling> {
  const redis = new Redis(url, { enableAutoPipelining: false, connectionName: "bench:ceiling" });
  const tag = "{bench:ceiling}";
  const keys = [`${tag}:n`, `${tag}:h`, `${tag}:z`, `${tag}:s`];
  const sha = (await redis.script("LOAD", script.lua)) as string;
  let calls = 0;
  let counting = false;
  let stop = false;
  const payload = "x".repeat(64);
  const lane = async (lane: number) => {
    for (let i = 0; !stop; i++) {
      const field = `f${(lane * 1_000_003 + i) % 10_000}`;
      await redis.evalsha(sha, 4, ...keys, ...script.argv(field, payload, i));
      if (counting) calls++;
    }
  };
  const lanes = Array.from({ length: inFlight }, (_, l) => lane(l));
  await new Promise((r) => setTimeout(r, Math.min(1000, seconds * 200))); // warm-up
  counting = true;
  const t0 = performance.now();
  await new Promise((r) => setTimeout(r, seconds * 1000));
  counting = false;
  const wall = (performance.now() - t0) / 1000;
  const counted = calls;
  stop = true;
  await Promise.all(lanes);
  await redis.del(...keys);
  await redis.quit();
  const result = { callsPerSec: counted / wall, calls: counted, seconds: wall, inFlight };
  progress(`Lua ceiling: ${Math.round(result.callsPerSec)} calls/s (${inFlight} in flight, ${wall.toFixed(1)} s)`);
  return result;
}
