/**
 * bench:handout — the client-side cost of the ways the dispatcher can talk to Redis,
 * one by one, against a private redis-server (AOF off: the client is measured), next
 * to the resolve-path ceiling measured first on the same server:
 *
 * - a continuation job (Wait-sized data, the dispatcher's options) added by BullMQ's
 *   `addBulk`, by `add` per job, or the dispatcher's way (one script call per 16 jobs:
 *   workers' job-adds.ts), in steps of 1, 2, 4, 8, 16 and 50 jobs, one step at a time;
 * - a dispatch step as the dispatcher takes it, in steps of 1, 2 and 16 waits: its jobs, then
 *   the waits' `continuation_dispatched` entries (annotateWaits) with the entries' XACK in one
 *   pipeline, or all three in one call (a single Redis: workers' STEP_LUA);
 * - two commands (an HSET and an XACK: the annotation and the ack) sent by an ioredis
 *   pipeline or straight on the connection in one socket write, on a connection that
 *   defines no scripts (as the engine's): what a pipeline costs without scripts to copy;
 * - a time as ISO text by `Date.prototype.toISOString` or by the engine's `iso`;
 * - a script call built and its bytes written, by ioredis's own `Script` or by the engine's
 *   `LuaScript` (engine's script-command.ts): an acceptEvents call (9 keys, 10 arguments, one a
 *   700-byte packed Buffer) and a call adding 16 continuation jobs (BullMQ's msgpack Buffers
 *   among them), on a connection that only builds them.
 *
 * The process's CPU (user + sys) and wall time per job or per step; rounds alternate
 * the two ways, medians printed. Usage: npm run bench:handout [-- --rounds 5] [-- --quick]
 */
import { createRequire } from "node:module";
import { createResources, iso, LuaScript, parseConfig } from "@rendezvous/engine";
import type { Wait } from "@rendezvous/protocol";
import {
  addStepJobs,
  addStepJobsRecorded,
  continuationJobs,
  dispatchedEntries,
  type Handout,
  type JobToAdd,
} from "@rendezvous/workers";
import { Queue } from "bullmq";
import { type Command, Redis } from "ioredis";
import { pino } from "pino";
import { parseArgs } from "./lib/args.js";
import { measureCeiling, RESOLVE_CEILING } from "./lib/ceiling.js";
import { startBenchRedis } from "./lib/redis.js";
import { load } from "./lib/setup.js";
import { median } from "./lib/stats.js";
import { fmt, printTable } from "./lib/table.js";

const args = parseArgs();
const quick = args.flag("quick");
const rounds = args.number("rounds", quick ? 2 : 5);
const jobsPerCase = quick ? 600 : 2_000;

const server = await startBenchRedis(10 * 60_000);
const ceiling = await measureCeiling(server.url, quick ? 1 : 3, 64, RESOLVE_CEILING);
const conn = new Redis(server.url, { maxRetriesPerRequest: null });
const queue = new Queue("continuations.acme", { connection: conn, prefix: "bench" });
await queue.waitUntilReady();

const WAIT = {
  tenant: "acme",
  runId: "run-cfb5ebf1-ba90-4dec-82f7-a02bf6dc211d",
  position: "step-3#1",
  eventType: "order.paid",
  correlationId: "ord_560283408910",
  state: "resolved",
  createdAt: "2026-12-03T17:00:00.000Z",
  deadline: "2026-12-03T18:00:00.000Z",
  since: null,
  resolution: {
    kind: "event",
    at: "2026-12-03T17:00:01.000Z",
    event: { producer: "payments", eventId: "evt-1", acceptedAt: "2026-12-03T17:00:01.000Z", streamId: "1-0" },
    payload: { amount: 1299, currency: "EUR", captured: true },
  },
  metadata: null,
};
let next = 0;
/** A wait's hand-out as the dispatcher has it (its queue, no trace). */
const handout = (id: string): Handout => ({
  wait: { ...WAIT, id } as unknown as Wait,
  entryId: "1-1",
  queue: queue.name,
  trace: undefined,
  span: undefined,
});
/** A continuation job as the dispatcher adds it (handouts.ts), kept a day once completed. */
const job = () => continuationJobs([handout(`w${next++}.bench`)], 86_400_000)[0] as JobToAdd;

/** CPU and wall µs per unit of `units` units run in steps by `step`. */
async function measure(units: number, perStep: number, step: () => Promise<unknown>): Promise<[number, number]> {
  const cpu = process.cpuUsage();
  const t0 = performance.now();
  for (let done = 0; done < units; done += perStep) await step();
  const used = process.cpuUsage(cpu);
  return [(used.user + used.system) / units, ((performance.now() - t0) * 1000) / units];
}

const warn = (msg: string) => console.warn(msg);

interface Case {
  name: string;
  unit: string;
  units: number;
  perStep: number;
  ways: Record<string, () => Promise<unknown>>;
}
const cases: Case[] = [1, 2, 4, 8, 16, 50].map((size) => ({
  name: `continuation jobs, steps of ${size}`,
  unit: "job",
  units: Math.max(jobsPerCase, size * 20),
  perStep: size,
  ways: {
    addBulk: () => queue.addBulk(Array.from({ length: size }, job)),
    add: () => Promise.all(Array.from({ length: size }, job).map((j) => queue.add(j.name, j.data, j.opts))),
    dispatcher: () => {
      const jobs = Array.from({ length: size }, job);
      return addStepJobs(queue, conn, jobs, warn);
    },
  },
}));
// a dispatch step: settled waits of one partition (one match key), an outbox group to ack in
const res = createResources({
  redisUrl: server.url,
  prefix: "bh",
  config: parseConfig({ partitions: 16 }),
  logger: pino({ level: "silent" }),
});
const OUTBOX = "{bench}:o";
await conn.xgroup("CREATE", OUTBOX, "dispatchers", "$", "MKSTREAM");
const STEP_WAITS = quick ? 300 : 1_000;
const pool: string[] = [];
async function fillPool(n: number): Promise<void> {
  for (let i = 0; i < n; i += 100) {
    const regs = Array.from({ length: Math.min(100, n - i) }, () =>
      res.store.register("acme", {
        runId: `run-${next++}`,
        position: "p",
        eventType: "order.paid",
        correlationId: "c",
      }),
    );
    for (const r of await Promise.all(regs)) pool.push(r.wait.id);
  }
}
// (a step count rounds up: up to 15 more than STEP_WAITS per round and way in steps of 16)
await fillPool(3 * 2 * rounds * (STEP_WAITS + 16));
const dispatchStep = (size: number) => {
  // (the dispatcher's own jobs and entries: handouts.ts)
  const handouts = pool.splice(0, size).map(handout);
  const jobs = continuationJobs(handouts, 86_400_000);
  return { jobs, annotations: dispatchedEntries(handouts), acks: handouts.map((h) => h.entryId) };
};
for (const size of [1, 2, 16]) {
  cases.push({
    name: `a dispatch step of ${size}: jobs, entries, ack`,
    unit: "wait",
    units: STEP_WAITS,
    perStep: size,
    ways: {
      "two round trips": async () => {
        const { jobs, annotations, acks } = dispatchStep(size);
        await addStepJobs(queue, conn, jobs, warn);
        await res.store.annotateMany(annotations, [
          { key: OUTBOX, add: (p) => p.xack(OUTBOX, "dispatchers", ...acks) },
        ]);
      },
      "one call": async () => {
        const { jobs, annotations, acks } = dispatchStep(size);
        const [annotate] = res.store.annotateCalls(annotations);
        if (!annotate) throw new Error("no annotation call");
        const record = { annotate, ack: { key: OUTBOX, group: "dispatchers", ids: acks } };
        if (!(await addStepJobsRecorded(queue, conn, jobs, record, warn))) throw new Error("not in one call");
      },
    },
  });
}
// the engine's connections define no scripts (BullMQ's connection defines 64, which every pipeline on it copies)
const plain = new Redis(server.url);
await plain.xgroup("CREATE", "{bench}:s", "g", "$", "MKSTREAM");
cases.push({
  name: "HSET + XACK in one round trip",
  unit: "step",
  units: jobsPerCase,
  perStep: 1,
  ways: {
    pipeline: () => plain.pipeline().hset("{bench}:h", `f${next++}`, "v").xack("{bench}:s", "g", "1-1").exec(),
    connection: () => {
      plain.stream.cork();
      const both = Promise.all([plain.hset("{bench}:h", `f${next++}`, "v"), plain.xack("{bench}:s", "g", "1-1")]);
      setImmediate(() => plain.stream.uncork());
      return both;
    },
  },
});
const base = Date.UTC(2026, 11, 3, 17);
const TIMES = 200_000;
cases.push({
  name: `a time as ISO text (${TIMES.toLocaleString("en")} per step)`,
  unit: "time",
  units: TIMES * 5,
  perStep: TIMES,
  ways: {
    toISOString: async () => {
      for (let i = 0; i < TIMES; i++) new Date(base + i * 7).toISOString();
    },
    iso: async () => {
      for (let i = 0; i < TIMES; i++) iso(base + i * 7);
    },
  },
});
const CALLS = 2_000;
const keys = (n: number) => Array.from({ length: n }, (_, i) => `{bench:p${i}}:k${i}`);
const acceptCall: Array<string | number | Buffer> = [...keys(9), "86400000", "", Buffer.alloc(700, 65)];
acceptCall.push("100", "86400000", "w3.", "matchers c-1", "dispatchers d-1", "16", "");
const addCall: Array<string | number | Buffer> = [];
for (let j = 0; j < 16; j++) addCall.push(...keys(8));
for (let j = 0; j < 16; j++)
  addCall.push("", Buffer.alloc(24, 1), JSON.stringify({ ...WAIT, id: `w${j}` }), Buffer.alloc(80, 3));
// a connection that only builds each call and its bytes (one socket: EVALSHA after the first)
const socket = {};
const sink = {
  sendCommand(command: Command) {
    command.toWritable(socket);
    return command.promise;
  },
};
type IoredisScript = InstanceType<typeof import("ioredis/built/Script.js").default>;
const { default: IoredisScript } = createRequire(import.meta.url)("ioredis/built/Script.js") as {
  default: new (lua: string, numberOfKeys: number) => IoredisScript;
};
for (const [label, callArgs, numberOfKeys] of [
  ["an acceptEvents call", acceptCall, 9],
  ["a call adding 16 jobs", addCall, 128],
] as const) {
  const lua = `return ${numberOfKeys}`;
  const theirs = new IoredisScript(lua, numberOfKeys);
  const ours = new LuaScript(lua, numberOfKeys);
  cases.push({
    name: `${label}, built and written (${CALLS.toLocaleString("en")} per step)`,
    unit: "call",
    units: CALLS * 20,
    perStep: CALLS,
    ways: {
      "ioredis Script": async () => {
        for (let i = 0; i < CALLS; i++) theirs.execute(sink, [...callArgs], {});
      },
      LuaScript: async () => {
        for (let i = 0; i < CALLS; i++) ours.execute(sink, [], callArgs, {});
      },
    },
  });
}

const rows: (string | number)[][] = [];
for (const c of cases) {
  const results = new Map<string, [number[], number[]]>(Object.keys(c.ways).map((w) => [w, [[], []]]));
  for (let r = 0; r < rounds; r++) {
    for (const [way, step] of Object.entries(c.ways)) {
      const [cpu, wall] = await measure(c.units, c.perStep, step);
      results.get(way)?.[0].push(cpu);
      results.get(way)?.[1].push(wall);
    }
  }
  for (const [way, [cpu, wall]] of results) {
    rows.push([
      c.name,
      way,
      fmt(median(cpu), c.unit === "time" ? 3 : 1),
      fmt(median(wall), c.unit === "time" ? 3 : 1),
      c.unit,
    ]);
  }
}
printTable(
  `The hand-out's client side, medians of ${rounds} rounds (ceiling: ${Math.round(ceiling.callsPerSec).toLocaleString("en")} resolve-path calls/s on this server, 64 in flight; load average ${load()})`,
  ["case", "way", "CPU µs per unit", "wall µs per unit", "unit"],
  rows,
);
await queue.close();
await res.close();
conn.disconnect();
plain.disconnect();
process.kill(server.pid, "SIGKILL");
process.exit(0);
