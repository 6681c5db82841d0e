/**
 * bench:capacity — Redis bytes held per item, on a private redis-server (MEMORY USAGE,
 * SAMPLES 0, of every key, by kind): per pending wait, per settled wait (with its event),
 * per continuation job waiting, completed (the host's worker consumed the wait), and
 * compacted by the scheduler; the queue's `events` stream (BullMQ caps it at ~10,000
 * entries: bounded, not per wait) apart; then what they mean at 10, 100 and 1,000
 * resolutions/s against the default retentions (docs/operations.md, Capacity).
 * Usage: npm run bench:capacity [-- --waits 5000]
 */
import { compactContinuations, createResources, parseConfig, type Resources } from "@rendezvous/engine";
import { continuationQueueName, Dispatcher, Matcher } from "@rendezvous/workers";
import { Queue, Worker } from "bullmq";
import type { Redis } from "ioredis";
import { pino } from "pino";
import { parseArgs } from "./lib/args.js";
import { runPool } from "./lib/pool.js";
import { startBenchRedis } from "./lib/redis.js";
import { load, machine, saveResults, TENANT } from "./lib/setup.js";
import { fmt, printTable, progress } from "./lib/table.js";
import { ingest, registerTargets } from "./suites/e2e.js";

const PREFIX = "cap";
const QUEUE = continuationQueueName(TENANT);

/** `{cap:p3}:w` → `p:w`; `cap:continuations.acme:<id>` → `q:job`; `…:completed` → `q:completed`. */
function kindOf(key: string): string {
  const part = /^\{[^}]*:p\d+\}:([^:]+)/.exec(key);
  if (part) return `p:${part[1]}`;
  if (key.startsWith(`${PREFIX}:${QUEUE}:`)) {
    const suffix = key.slice(`${PREFIX}:${QUEUE}:`.length);
    return /^w\d+\./.test(suffix) && !suffix.includes(":") ? "q:job" : `q:${suffix}`;
  }
  return "other";
}

/** Bytes (MEMORY USAGE, exact) of every key, summed by kind. */
async function bytesByKind(redis: Redis): Promise<Map<string, number>> {
  const keys: string[] = [];
  let cursor = "0";
  do {
    const [next, batch] = await redis.scan(cursor, "COUNT", 1000);
    cursor = next;
    keys.push(...batch);
  } while (cursor !== "0");
  const out = new Map<string, number>();
  for (let i = 0; i < keys.length; i += 1000) {
    const chunk = keys.slice(i, i + 1000);
    const sizes = (await redis.pipeline(chunk.map((k) => ["memory", "usage", k, "samples", "0"])).exec()) ?? [];
    chunk.forEach((k, j) => {
      const kind = kindOf(k);
      out.set(kind, (out.get(kind) ?? 0) + Number(sizes[j]?.[1] ?? 0));
    });
  }
  return out;
}

const sum = (m: Map<string, number>, f: (kind: string) => boolean) =>
  [...m].reduce((n, [k, v]) => (f(k) ? n + v : n), 0);
/** the partition keys kept for a wait's life and its retention; not the streams (`s`, `o`), trimmed once their entries are processed */
const partition = (k: string) => k.startsWith("p:") && k !== "p:s" && k !== "p:o" && k !== "p:id";
/** the events' dedup records, kept dedupWindowMs (7 days by default) */
const dedup = (k: string) => k === "p:id";
const streams = (k: string) => k === "p:s" || k === "p:o";
/** the continuation jobs: job hashes and the queue's sets (the cursor included), not its capped events stream */
const perJob = (k: string) => k.startsWith("q:") && k !== "q:events";

async function until(what: string, check: () => Promise<boolean>, ms = 120_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`${what}: not within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** The fields of one job hash and their value sizes, and its encoding. */
async function jobShape(redis: Redis, id: string): Promise<string> {
  const key = `${PREFIX}:${QUEUE}:${id}`;
  const fields = await redis.hgetall(key);
  const enc = await redis.object("ENCODING", key);
  const bytes = await redis.memory("USAGE", key, "SAMPLES", "0");
  const parts = Object.entries(fields).map(([f, v]) => `${f} ${Buffer.byteLength(v)}`);
  return `${bytes} B (${enc}): ${parts.join(", ")}`;
}

export async function main(): Promise<void> {
  const args = parseArgs();
  const n = args.number("waits", 5000);
  const server = await startBenchRedis(10 * 60_000);
  const logger = pino({ level: "warn" }, pino.destination(2));
  const make = (): Resources =>
    createResources({
      redisUrl: server.url,
      prefix: PREFIX,
      config: parseConfig({ partitions: 16, continuationCompactAfterMs: 0 }),
      logger,
    });
  const api = make();
  const roles = make();
  const admin = api.connect("bench-admin") as Redis;
  const matcher = new Matcher(roles);
  const dispatcher = new Dispatcher(roles, { webhookConcurrency: 0 });
  await matcher.start();
  await dispatcher.start();
  const queue = new Queue(QUEUE, { connection: api.connect("bench-queue"), prefix: PREFIX });
  try {
    const s0 = await bytesByKind(admin);
    progress(`registering ${n} waits`);
    const targets = await registerTargets(api, n, 64);
    const s1 = await bytesByKind(admin);
    progress(`${n} events`);
    const batches = Array.from({ length: Math.ceil(n / 100) }, (_, i) => targets.slice(i * 100, i * 100 + 100));
    await runPool(batches.length, 4, async (i) => {
      await ingest(api, batches[i] ?? []);
    });
    await until("continuations waiting", async () => (await queue.getWaitingCount()) >= n);
    const s2 = await bytesByKind(admin);
    const sample = targets[0]?.waitId ?? "";
    const waitingShape = await jobShape(admin, sample);
    progress("the host's worker consumes them");
    const worker = new Worker(
      QUEUE,
      async (job) => {
        await api.store.consume(TENANT, job.id as string, "bench-host");
      },
      { connection: api.connect("bench-worker", { blocking: true }), prefix: PREFIX, concurrency: 50 },
    );
    await until("continuations completed", async () => (await queue.getCompletedCount()) >= n);
    await worker.close();
    const s3 = await bytesByKind(admin);
    const completedShape = await jobShape(admin, sample);
    progress("compacting");
    const before = await admin.info("commandstats");
    const t0 = performance.now();
    let calls = 0;
    for (;;) {
      calls++;
      const [r] = await compactContinuations(admin, PREFIX, [QUEUE], Date.now(), 500);
      if (!r?.more) break;
    }
    const compactMs = performance.now() - t0;
    const after = await admin.info("commandstats");
    const s4 = await bytesByKind(admin);
    const compactedShape = await jobShape(admin, sample);

    const per = (a: Map<string, number>, b: Map<string, number>, f: (k: string) => boolean) =>
      (sum(b, f) - sum(a, f)) / n;
    const usec = (text: string) =>
      [...text.matchAll(/cmdstat_(?:evalsha|eval):calls=(\d+),usec=(\d+)/g)].reduce((u, m) => u + Number(m[2]), 0);
    const result = {
      waits: n,
      pendingWait: per(s0, s1, partition),
      settledWait: per(s0, s2, partition),
      consumedWait: per(s0, s3, partition),
      dedupRecord: per(s0, s3, dedup),
      streamsResolved: per(s0, s2, streams),
      streamsConsumed: per(s0, s3, streams),
      waitingJob: per(s0, s2, perJob),
      completedJob: per(s0, s3, perJob),
      compactedJob: per(s0, s4, perJob),
      eventsStream: s4.get("q:events") ?? 0,
      compactUsecPerJob: (usec(after) - usec(before)) / n,
      compactMs,
      compactCalls: calls,
      kinds: Object.fromEntries([...s4].map(([k, v]) => [k, { s1: s1.get(k), s2: s2.get(k), s3: s3.get(k), s4: v }])),
      shapes: { waiting: waitingShape, completed: completedShape, compacted: compactedShape },
      machine: machine(),
      load: load(),
    };
    printTable(
      `Redis bytes per item (${n} waits, MEMORY USAGE of every key; load ${result.load})`,
      ["item", "bytes"],
      [
        ["pending wait (partition keys)", fmt(result.pendingWait, 0)],
        ["settled wait, with its event (partition keys but dedup)", fmt(result.settledWait, 0)],
        ["settled and consumed wait (partition keys)", fmt(result.consumedWait, 0)],
        ["its event's dedup record (kept dedupWindowMs)", fmt(result.dedupRecord, 0)],
        [
          "partition streams and outboxes (until trimmed), resolved / consumed",
          `${fmt(result.streamsResolved, 0)} / ${fmt(result.streamsConsumed, 0)}`,
        ],
        ["continuation job waiting (job hash + wait list)", fmt(result.waitingJob, 0)],
        ["continuation job completed (job hash + completed set)", fmt(result.completedJob, 0)],
        ["continuation job compacted (job hash + completed set)", fmt(result.compactedJob, 0)],
        ["queue events stream (capped, per queue, not per wait)", fmt(result.eventsStream, 0)],
      ],
    );
    printTable(
      "Bytes by key kind (after registering / resolving / consuming / compacting)",
      ["kind", "registered", "resolved", "consumed", "compacted"],
      Object.entries(result.kinds).map(([k, v]) => [k, v.s1 ?? 0, v.s2 ?? 0, v.s3 ?? 0, v.s4]),
    );
    console.log(`job hash waiting:   ${waitingShape}`);
    console.log(`job hash completed: ${completedShape}`);
    console.log(`job hash compacted: ${compactedShape}`);
    console.log(
      `compaction: ${calls} calls of ≤ 500 jobs, ${fmt(compactMs, 0)} ms, ${fmt(result.compactUsecPerJob, 2)} µs of Redis (EVALSHA usec) per job`,
    );
    const day = 86_400;
    const retained = (rate: number) => {
      const settled = rate * day * result.consumedWait;
      const dedups = rate * 7 * day * result.dedupRecord;
      const continuations = rate * day * result.compactedJob + rate * 10 * (result.completedJob - result.compactedJob);
      const uncompacted = rate * day * result.completedJob;
      return [rate, gb(settled), gb(dedups), gb(continuations), gb(uncompacted)];
    };
    const gb = (b: number) => `${fmt(b / 1e9, 2)} GB`;
    printTable(
      "Held at a steady rate, default retentions (settled waits and completed continuations 1 day, dedup 7 days, compaction after 10 s)",
      ["resolutions/s", "settled waits", "dedup records", "continuations (compacted)", "continuations (not compacted)"],
      [10, 100, 1000].map(retained),
    );
    console.log(`results: ${saveResults("capacity", result)}`);
  } finally {
    await queue.close();
    await dispatcher.stop();
    await matcher.stop();
    await roles.close();
    await api.close();
    process.kill(server.pid, "SIGKILL");
  }
}

await main();
