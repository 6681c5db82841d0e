/**
 * The machine's floor under a one-at-a-time chain: what one Redis round trip (PING, one
 * ioredis client) takes when the client and redis-server were idle before it, beside the
 * same round trip back to back. One event at a time, every hop of the resolve path wakes a
 * process that has been idle since the hop before (driver → API → Redis → API → … → the
 * host's worker), so each hop pays this machine's wake-up from idle; the chain's p50 and
 * p99 are read against it (docs/benchmarks.md, bench:blackbox).
 */
import { Redis } from "ioredis";
import { type Summary, sleep, summarize } from "./stats.js";

export interface WakeFloor {
  /** the idle gap before each round trip, ms */
  gapMs: number;
  /** one PING after the idle gap, ms */
  idle: Summary;
  /** one PING right after the previous one, ms */
  busy: Summary;
}

/** `samples` round trips each way on a connection of its own to the Redis at `url`. */
export async function measureWakeFloor(url: string, samples = 1000, gapMs = 2): Promise<WakeFloor> {
  const redis = new Redis(url, { enableAutoPipelining: false, connectionName: "bench:wake-floor" });
  try {
    const roundTrip = async () => {
      const t0 = performance.now();
      await redis.ping();
      return performance.now() - t0;
    };
    for (let i = 0; i < 200; i++) await roundTrip(); // warm-up
    const busy: number[] = [];
    for (let i = 0; i < samples; i++) busy.push(await roundTrip());
    const idle: number[] = [];
    for (let i = 0; i < samples; i++) {
      await sleep(gapMs);
      idle.push(await roundTrip());
    }
    return { gapMs, idle: summarize(idle), busy: summarize(busy) };
  } finally {
    redis.disconnect();
  }
}

/** p50 / p99 / max of one way, ms. */
const spread = (s: Summary) => `${s.p50.toFixed(3)} / ${s.p99.toFixed(3)} / ${s.max.toFixed(2)}`;

/** The floor as one line: p50 / p99 / max of each way. */
export function wakeFloorLine(f: WakeFloor): string {
  return `one Redis round trip (PING) after ${f.gapMs} ms idle, p50 / p99 / max ms: ${spread(f.idle)}; back to back: ${spread(f.busy)} (${f.idle.count} each)`;
}

/** The floor as a row of `npm run bench`: metric, value and the back-to-back figures beside. */
export function wakeFloorCells(f: WakeFloor): { metric: string; value: string; target: string } {
  return {
    metric: `the machine: one Redis round trip after ${f.gapMs} ms idle, p50 / p99 / max ms (${f.idle.count})`,
    value: spread(f.idle),
    target: `back to back ${f.busy.p50.toFixed(3)} / ${f.busy.p99.toFixed(3)}`,
  };
}
