/**
 * The wait shapes (docs/api.md, Wait shapes) side by side, in one run against one
 * private redis-server (AOF everysec, 16 partitions): for each shape — one type, any-of
 * two types, count 3, any-of two types with count 3 —
 *
 * 1. memory: used_memory before/after N pending waits of that shape (deadlines 1 h
 *    ahead, no scheduler): bytes per pending wait;
 * 2. match: the events that resolve them (one per wait; three per count-3 wait, the
 *    any-of ones alternating types) ingested first, then matched through store.match
 *    (50 events of one partition per call, 8 calls in flight, as a matcher does):
 *    matched events/s and resolved waits/s.
 *
 * Usage: npm run bench:shapes [-- --waits N] (default 20,000; --quick: 2,000).
 */
import type { Resources } from "@rendezvous/engine";
import type { WaitSpec } from "@rendezvous/protocol";
import type { Redis } from "ioredis";
import { parseArgs } from "../lib/args.js";
import { runPool } from "../lib/pool.js";
import { quiesce, startBenchRedis, usedMemory } from "../lib/redis.js";
import { correlationIds, machine, POSITION, PRODUCER, resources, runId, saveResults, TENANT } from "../lib/setup.js";
import { sleep } from "../lib/stats.js";
import { fmt, printTable, progress } from "../lib/table.js";

interface Shape {
  name: string;
  types: string[];
  count: number;
}

export const SHAPES: Shape[] = [
  { name: "one type", types: ["order.paid"], count: 1 },
  { name: "any-of 2 types", types: ["payment.settled", "payment.failed"], count: 1 },
  { name: "count 3", types: ["approval.given"], count: 3 },
  { name: "any-of 2 + count 3", types: ["shard.done", "shard.skipped"], count: 3 },
];

export interface ShapeResult {
  shape: string;
  waits: number;
  bytesPerWait: number;
  events: number;
  eventsPerSec: number;
  waitsPerSec: number;
  resolved: number;
}

function specOf(shape: Shape, correlationId: string): WaitSpec {
  return {
    runId: runId(),
    position: POSITION,
    correlationId,
    timeoutMs: 3_600_000,
    ...(shape.types.length > 1 ? { eventTypes: shape.types } : { eventType: shape.types[0] as string }),
    ...(shape.count > 1 ? { count: shape.count } : {}),
  };
}

async function oneShape(
  url: string,
  admin: Redis,
  shape: Shape,
  i: number,
  opts: { waits: number; partitions: number },
): Promise<ShapeResult> {
  await admin.flushall("SYNC");
  const res: Resources = resources(url, `sh${i}`, opts.partitions);
  try {
    const ids = correlationIds(opts.waits);
    // warm-up: scripts loaded, connections open (then removed)
    await runPool(50, 10, async (j) => void (await res.store.register(TENANT, specOf(shape, `warm-${j}`))));
    await admin.flushall("SYNC");
    await quiesce(admin);
    await sleep(200);
    const before = await usedMemory(admin);
    progress(`shapes ${shape.name}: registering ${opts.waits} waits`);
    const waitIds: string[] = new Array(opts.waits);
    await runPool(opts.waits, 200, async (j) => {
      waitIds[j] = (await res.store.register(TENANT, specOf(shape, ids[j] as string))).wait.id;
    });
    await quiesce(admin);
    await sleep(200);
    const after = await usedMemory(admin);

    // the events that resolve every wait: ingested before the clock starts
    const events = ids.flatMap((corr, j) =>
      Array.from({ length: shape.count }, (_, k) => ({
        id: `e-${j}-${k}`,
        type: shape.types[(j + k) % shape.types.length] as string,
        correlationId: corr,
        payload: { j, k },
      })),
    );
    progress(`shapes ${shape.name}: ingesting ${events.length} events`);
    const byPartition = new Map<number, Array<{ streamId: string; eventKey: string }>>();
    for (let b = 0; b < events.length; b += 500) {
      const batch = events.slice(b, b + 500);
      const results = await res.store.ingest(TENANT, PRODUCER, batch);
      results.forEach((r, k) => {
        const e = batch[k] as (typeof batch)[number];
        if (r.status !== "accepted") throw new Error(`ingest: ${r.status}`);
        const p = res.store.keys.matchPartition(TENANT, e.type, e.correlationId);
        const list = byPartition.get(p) ?? [];
        list.push({ streamId: r.event.streamId, eventKey: res.store.keys.eventKey(TENANT, PRODUCER, e.id) });
        byPartition.set(p, list);
      });
    }
    const calls = [...byPartition].flatMap(([p, items]) => {
      const out: Array<{ p: number; items: typeof items }> = [];
      for (let c = 0; c < items.length; c += 50) out.push({ p, items: items.slice(c, c + 50) });
      return out;
    });
    progress(`shapes ${shape.name}: matching`);
    const t0 = performance.now();
    await runPool(calls.length, 8, async (c) => {
      const call = calls[c] as (typeof calls)[number];
      await res.store.match(call.p, call.items);
    });
    const seconds = (performance.now() - t0) / 1000;
    let resolved = 0;
    for (let b = 0; b < waitIds.length; b += 1000) {
      const waits = await res.store.getWaits(waitIds.slice(b, b + 1000));
      resolved += waits.filter((w) => w?.state === "resolved").length;
    }
    return {
      shape: shape.name,
      waits: opts.waits,
      bytesPerWait: (after - before) / opts.waits,
      events: events.length,
      eventsPerSec: events.length / seconds,
      waitsPerSec: opts.waits / seconds,
      resolved,
    };
  } finally {
    await res.close();
  }
}

/** Every shape, one after the other, on one server (each on a flushed Redis). */
export async function shapesBench(
  url: string,
  admin: Redis,
  opts: { waits: number; partitions: number },
): Promise<ShapeResult[]> {
  const out: ShapeResult[] = [];
  for (const [i, shape] of SHAPES.entries()) out.push(await oneShape(url, admin, shape, i, opts));
  return out;
}

export function printShapes(results: ShapeResult[]): void {
  printTable(
    "wait shapes: match throughput and memory per pending wait",
    ["shape", "waits", "events", "events/s", "waits/s", "resolved", "bytes/wait"],
    results.map((r) => [
      r.shape,
      r.waits,
      r.events,
      fmt(r.eventsPerSec, 0),
      fmt(r.waitsPerSec, 0),
      r.resolved,
      fmt(r.bytesPerWait, 0),
    ]),
  );
}

export async function main(): Promise<void> {
  const args = parseArgs();
  const quick = args.flag("quick");
  const waits = args.number("waits", quick ? 2000 : 20_000);
  const partitions = args.number("partitions", 16);
  const server = await startBenchRedis(20 * 60_000);
  const { Redis } = await import("ioredis");
  const admin = new Redis(server.url, { connectionName: "bench:shapes" });
  try {
    console.log(`rendezvous bench:shapes — ${new Date().toISOString()}; machine: ${machine()}`);
    const results = await shapesBench(server.url, admin, { waits, partitions });
    printShapes(results);
    console.log(`results: ${saveResults("shapes", { waits, partitions, results })}`);
  } finally {
    admin.disconnect();
    await server.stop();
  }
}
