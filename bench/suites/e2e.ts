/**
 * End to end: events from store.ingest to the continuation job in BullMQ
 * (`continuations.acme`, job id = wait id), with one Matcher and one Dispatcher in
 * this process (each on its own connections, as separate processes would be).
 * See docs/benchmarks.md.
 *
 * 1. throughput: W waits pre-registered, one per correlation id; their W events
 *    ingested in batches of 100, several batches in flight; the run ends when W
 *    continuation jobs are waiting in the queue (polled with getWaitingCount, no
 *    worker consuming, so nothing else loads Redis).
 * 2. latency at half that rate, paced: per event, ingest call return (accepted) →
 *    continuation job added. The add time is the Redis time of the queue's `added`
 *    event (its stream id), read by a QueueEvents listener: one XREAD for many jobs.
 * 3. latency one event at a time.
 */

import type { Resources } from "@rendezvous/engine";
import type { EventInput } from "@rendezvous/protocol";
import { continuationQueueName, Dispatcher, Matcher } from "@rendezvous/workers";
import { Queue, QueueEvents } from "bullmq";
import type { Redis } from "ioredis";
import { parseArgs } from "../lib/args.js";
import { measureCeiling } from "../lib/ceiling.js";
import { type StageStats, Stages } from "../lib/instrument.js";
import { runPool } from "../lib/pool.js";
import { info, openWindow, startBenchRedis, type Window } from "../lib/redis.js";
import {
  correlationIds,
  EVENT_TYPE,
  load,
  machine,
  POSITION,
  PRODUCER,
  resources,
  runId,
  saveResults,
  TENANT,
} from "../lib/setup.js";
import { type Summary, sleep, summarize } from "../lib/stats.js";
import { fmt, pct, printTable, progress } from "../lib/table.js";

export const QUEUE = continuationQueueName(TENANT);

export interface Target {
  waitId: string;
  correlationId: string;
  eventId: string;
}

let eventSeq = 0;

/** Registers one wait per correlation id; returns what the events must carry. */
export async function registerTargets(api: Resources, count: number, inFlight: number): Promise<Target[]> {
  const ids = correlationIds(count);
  const out: Target[] = new Array(count);
  await runPool(count, inFlight, async (i) => {
    const correlationId = ids[i] as string;
    const { wait } = await api.store.register(TENANT, {
      runId: runId(),
      position: POSITION,
      eventType: EVENT_TYPE,
      correlationId,
      timeoutMs: 3_600_000,
    });
    out[i] = { waitId: wait.id, correlationId, eventId: `evt_${Date.now().toString(36)}_${eventSeq++}` };
  });
  return out;
}

export function event(t: Target): EventInput {
  return {
    id: t.eventId,
    type: EVENT_TYPE,
    correlationId: t.correlationId,
    occurredAt: new Date().toISOString(),
    payload: { orderId: t.correlationId, amount: 4200, currency: "EUR" },
  };
}

export async function ingest(api: Resources, targets: Target[]): Promise<number[]> {
  const results = await api.store.ingest(TENANT, PRODUCER, targets.map(event));
  return results.map((r) => {
    if (r.status !== "accepted") throw new Error(`event not accepted: ${r.status}`);
    return Number(r.event.streamId.split("-")[0]);
  });
}

/** Redis time (ms) at which each continuation job was added, by job id. */
export class AddedJobs {
  readonly at = new Map<string, number>();
  readonly #waiters = new Map<string, (ms: number) => void>();
  readonly events: QueueEvents;

  constructor(res: Resources) {
    this.events = new QueueEvents(QUEUE, {
      connection: res.connect("bench-queue-events", { blocking: true }),
      prefix: res.prefix,
    });
    this.events.on("added", ({ jobId }, id) => {
      const ms = Number(id.split("-")[0]);
      this.at.set(jobId, ms);
      this.#waiters.get(jobId)?.(ms);
      this.#waiters.delete(jobId);
    });
  }

  /** Resolves with the add time of a job (or rejects after `ms`). */
  whenAdded(jobId: string, ms = 10_000): Promise<number> {
    const known = this.at.get(jobId);
    if (known !== undefined) return Promise.resolve(known);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`job ${jobId} not added within ${ms} ms`)), ms);
      this.#waiters.set(jobId, (t) => {
        clearTimeout(timer);
        resolve(t);
      });
    });
  }

  async waitFor(jobIds: string[], ms: number): Promise<number> {
    const until = Date.now() + ms;
    for (;;) {
      const missing = jobIds.filter((id) => !this.at.has(id)).length;
      if (missing === 0 || Date.now() > until) return missing;
      await sleep(50);
    }
  }
}

export interface Throughput {
  events: number;
  seconds: number;
  eventsPerSec: number;
  /** rate between 10 % and 90 % of the jobs (ramp-up and tail excluded) */
  steadyPerSec: number;
  ingestSeconds: number;
  ingestPerSec: number;
  complete: boolean;
  window: Window;
  stages: Map<string, StageStats>;
}

export async function throughput(
  api: Resources,
  admin: Redis,
  queue: Queue,
  stages: Stages,
  targets: Target[],
  opts: { batch: number; inFlight: number; maxMs: number },
): Promise<Throughput> {
  const base = await queue.getWaitingCount();
  const goal = base + targets.length;
  const batches = Math.ceil(targets.length / opts.batch);
  const close = await openWindow(admin);
  stages.take();
  const t0 = performance.now();
  let ingestMs = 0;
  const ingesting = runPool(batches, opts.inFlight, async (b) => {
    await ingest(api, targets.slice(b * opts.batch, (b + 1) * opts.batch));
  }).then(() => {
    ingestMs = performance.now() - t0;
  });
  let failed: unknown;
  ingesting.catch((err) => {
    failed = err;
  });
  const samples: Array<[ms: number, count: number]> = [];
  let last = 0;
  for (;;) {
    if (failed) throw failed;
    const count = (await queue.getWaitingCount()) - base;
    const ms = performance.now() - t0;
    samples.push([ms, count]);
    if (count - last >= targets.length / 10 || count >= targets.length) {
      progress(`  ${count}/${targets.length} continuations after ${fmt(ms / 1000)} s`);
      last = count;
    }
    if (count + base >= goal || ms > opts.maxMs) break;
    await sleep(20);
  }
  await ingesting;
  const window = await close();
  const stageStats = stages.take();
  const [endMs, endCount] = samples[samples.length - 1] as [number, number];
  const crossing = (fraction: number) => {
    const want = fraction * targets.length;
    const i = samples.findIndex(([, c]) => c >= want);
    return i < 0 ? Number.NaN : (samples[i] as [number, number])[0];
  };
  const t10 = crossing(0.1);
  const t90 = crossing(0.9);
  return {
    events: endCount,
    seconds: endMs / 1000,
    eventsPerSec: endCount / (endMs / 1000),
    steadyPerSec: (0.8 * targets.length) / ((t90 - t10) / 1000),
    ingestSeconds: ingestMs / 1000,
    ingestPerSec: targets.length / (ingestMs / 1000),
    complete: endCount >= targets.length,
    window,
    stages: stageStats,
  };
}

export interface Latency {
  rate: number;
  events: number;
  missing: number;
  /** ingest call returned → job added (ms) */
  fromReturn: Summary;
  /** accepted (stream id, Redis time) → job added (ms) */
  fromAccepted: Summary;
  window: Window;
  stages: Map<string, StageStats>;
}

/** Paced at `rate` events/s: every `tickMs`, one ingest call with the events due by then. */
export async function paced(
  api: Resources,
  admin: Redis,
  added: AddedJobs,
  stages: Stages,
  targets: Target[],
  rate: number,
  tickMs: number,
): Promise<Latency> {
  const returned: number[] = new Array(targets.length);
  const accepted: number[] = new Array(targets.length);
  const calls = new Set<Promise<void>>();
  const close = await openWindow(admin);
  stages.take();
  const t0 = performance.now();
  let sent = 0;
  while (sent < targets.length) {
    const due = Math.min(targets.length, Math.floor(((performance.now() - t0) / 1000) * rate) + 1);
    if (due > sent) {
      const from = sent;
      const to = Math.min(due, from + 100);
      sent = to;
      const call = ingest(api, targets.slice(from, to)).then((acc) => {
        const now = Date.now();
        for (let i = from; i < to; i++) {
          returned[i] = now;
          accepted[i] = acc[i - from] as number;
        }
      });
      calls.add(call);
      void call.finally(() => calls.delete(call));
    }
    await sleep(tickMs);
  }
  await Promise.all(calls);
  const missing = await added.waitFor(
    targets.map((t) => t.waitId),
    30_000,
  );
  const window = await close();
  const stageStats = stages.take();
  const fromReturn: number[] = [];
  const fromAccepted: number[] = [];
  targets.forEach((t, i) => {
    const at = added.at.get(t.waitId);
    if (at === undefined) return;
    fromReturn.push(at - (returned[i] as number));
    fromAccepted.push(at - (accepted[i] as number));
  });
  return {
    rate,
    events: targets.length,
    missing,
    fromReturn: summarize(fromReturn),
    fromAccepted: summarize(fromAccepted),
    window,
    stages: stageStats,
  };
}

/** One event at a time: ingest, wait for its job, next. */
export async function oneAtATime(
  api: Resources,
  added: AddedJobs,
  targets: Target[],
): Promise<{ fromReturn: Summary; fromCall: Summary }> {
  const fromReturn: number[] = [];
  const fromCall: number[] = [];
  for (const t of targets) {
    const called = Date.now();
    await ingest(api, [t]);
    const returned = Date.now();
    const at = await added.whenAdded(t.waitId);
    fromReturn.push(at - returned);
    fromCall.push(at - called);
  }
  return { fromReturn: summarize(fromReturn), fromCall: summarize(fromCall) };
}

interface StageCost {
  stage: string;
  seconds: number;
  /** redis-server CPU (user + sys) per event, µs */
  redisUs: number;
  /** this process's CPU per event, µs */
  nodeUs: number;
  scripts: number;
  usPerScript: number;
  commands: number;
}

/**
 * The cost of each step on its own: `count` events ingested with no matcher running,
 * then the matcher started alone on that backlog, then the dispatcher alone. Each step
 * drains a backlog in full batches: the cheapest per event it gets.
 */
async function costByStage(
  api: Resources,
  admin: Redis,
  queue: Queue,
  roles: { matcher: Matcher; dispatcher: Dispatcher },
  opts: { count: number; batch: number; inFlight: number },
): Promise<StageCost[]> {
  const targets = await registerTargets(api, opts.count, 200);
  const out: StageCost[] = [];
  const measure = async (stage: string, run: () => Promise<void>) => {
    const close = await openWindow(admin);
    await run();
    const w = await close();
    const scripts = w.commands.find((c) => c.command === "evalsha");
    out.push({
      stage,
      seconds: w.wallMs / 1000,
      redisUs: (w.redisCpu * w.wallMs * 1000) / opts.count,
      nodeUs: (w.nodeCpu * w.wallMs * 1000) / opts.count,
      scripts: (scripts?.calls ?? 0) / opts.count,
      usPerScript: scripts?.usecPerCall ?? 0,
      commands: w.commands.reduce((n, c) => n + c.calls, 0) / opts.count,
    });
  };
  const until = async (done: () => Promise<boolean>) => {
    const limit = Date.now() + 120_000;
    while (!(await done())) {
      if (Date.now() > limit) throw new Error("cost by stage: step did not finish in 120 s");
      await sleep(20);
    }
  };
  const outboxLength = async () => {
    const pipeline = admin.pipeline();
    for (const p of api.store.keys.allPartitions()) pipeline.xlen(api.store.keys.partition(p).outbox);
    return ((await pipeline.exec()) ?? []).reduce((n, [, len]) => n + Number(len ?? 0), 0);
  };
  await measure("ingest: dedup, append (no matcher running)", () =>
    runPool(Math.ceil(opts.count / opts.batch), opts.inFlight, async (b) => {
      await ingest(api, targets.slice(b * opts.batch, (b + 1) * opts.batch));
    }),
  );
  await measure("match: the matcher alone on that backlog", async () => {
    await roles.matcher.start();
    await until(async () => (await outboxLength()) >= opts.count);
  });
  const base = await queue.getWaitingCount();
  await measure("dispatch: the dispatcher alone on that backlog", async () => {
    await roles.dispatcher.start();
    await until(async () => (await queue.getWaitingCount()) - base >= opts.count);
  });
  return out;
}

function stageRows(stages: Map<string, StageStats>, wallMs: number, events: number) {
  return [...stages].map(([name, s]) => [
    name,
    s.calls,
    Number((s.items / Math.max(1, s.calls)).toFixed(1)),
    Number((s.totalMs / Math.max(1, s.calls)).toFixed(2)),
    Number(s.maxMs.toFixed(1)),
    pct(s.busyMs / wallMs, 0),
    Number(((s.busyMs * 1000) / Math.max(1, events)).toFixed(1)),
  ]);
}

/**
 * The benchmarked path in this process: the producer's resources, a Matcher and a
 * Dispatcher (each on its own connections, as separate roles would be), the
 * continuation queue and the job counter; `close` stops and closes all of it.
 */
export function startPath(url: string, prefix: string, partitions: number) {
  const api = resources(url, prefix, partitions);
  const matcherRes = resources(url, prefix, partitions);
  const dispatcherRes = resources(url, prefix, partitions);
  const matcher = new Matcher(matcherRes);
  const dispatcher = new Dispatcher(dispatcherRes);
  const queue = new Queue(QUEUE, { connection: api.connect("bench-count"), prefix });
  const added = new AddedJobs(api);
  const close = async () => {
    await matcher.stop();
    await dispatcher.stop();
    await added.events.close();
    await queue.close();
    await Promise.all([api.close(), matcherRes.close(), dispatcherRes.close()]);
  };
  return { api, matcherRes, dispatcherRes, matcher, dispatcher, queue, added, close };
}

export async function main(): Promise<void> {
  const args = parseArgs();
  const quick = args.flag("quick");
  const waits = args.number("waits", quick ? 2000 : 20_000);
  const batch = args.number("batch", 100);
  const batchesInFlight = args.number("batches-in-flight", 4);
  const latencySeconds = args.number("latency-seconds", quick ? 2 : 10);
  const singles = args.number("singles", quick ? 30 : 300);
  const tickMs = args.number("tick-ms", 10);
  const partitions = args.number("partitions", 16);
  const ceilingSeconds = args.number("ceiling-seconds", quick ? 1 : 5);
  const profileCount = args.number("profile-events", quick ? 1000 : 10_000);

  const server = await startBenchRedis(quick ? 120_000 : 15 * 60_000);
  const { Redis } = await import("ioredis");
  const admin = new Redis(server.url, { connectionName: "bench:admin" });
  const prefix = "e2e";
  const path = startPath(server.url, prefix, partitions);
  const { api, matcherRes, matcher, dispatcher, queue, added } = path;

  // stage timing: one wrapper per round trip of the path (see docs/benchmarks.md)
  const stages = new Stages();
  stages.wrap("ingest (2 round trips per batch)", api.store, "ingest");
  stages.wrap("matcher: match (1 pipelined round trip)", matcherRes.store, "match");
  stages.wrap("matcher: XACK", matcher.loop, "ack");
  // (the dispatcher's calls go through its own Store, on its own connection)
  stages.wrap("dispatcher: getWaits (entries without the record)", dispatcher.store, "getWaits");
  stages.wrap("dispatcher: addBulk (BullMQ, 1 pipeline)", dispatcher.queue(QUEUE), "addBulk");
  stages.wrap("dispatcher: add (BullMQ, steps of fewer than 5 jobs)", dispatcher.queue(QUEUE), "add");
  stages.wrap("dispatcher: annotateMany + XACK (1 pipeline per step)", dispatcher.store, "annotateMany");
  stages.wrap("dispatcher: XACK alone (a failpoint armed)", dispatcher.loop, "ack");

  try {
    const version = (await info(admin, "server")).get("redis_version");
    console.log(`rendezvous bench:e2e — ${new Date().toISOString()}`);
    console.log(
      `machine: ${machine()}; redis ${version}, appendonly yes, appendfsync everysec; ${partitions} partitions${quick ? "; --quick" : ""}`,
    );
    console.log(`load average (1/5/15 min) at start: ${load()}`);
    const ceiling = await measureCeiling(server.url, ceilingSeconds);

    await added.events.waitUntilReady();
    progress(`cost by stage: ${profileCount} events, each step alone`);
    const costs = await costByStage(
      api,
      admin,
      queue,
      { matcher, dispatcher },
      {
        count: profileCount,
        batch,
        inFlight: batchesInFlight,
      },
    );

    progress(`throughput: registering ${waits} waits`);
    const tpTargets = await registerTargets(api, waits, 200);
    progress(`throughput: ingesting ${waits} events, batches of ${batch}, ${batchesInFlight} in flight`);
    const tp = await throughput(api, admin, queue, stages, tpTargets, {
      batch,
      inFlight: batchesInFlight,
      maxMs: quick ? 60_000 : 300_000,
    });
    if (!tp.complete) console.log(`WARNING: only ${tp.events} of ${waits} continuations after ${fmt(tp.seconds)} s`);

    const rate = Math.max(10, Math.floor(tp.steadyPerSec / 2));
    const latencyCount = Math.max(50, Math.round(rate * latencySeconds));
    progress(`latency: registering ${latencyCount} waits`);
    const latTargets = await registerTargets(api, latencyCount, 200);
    await sleep(500);
    progress(`latency: ${latencyCount} events paced at ${rate}/s (one ingest call every ${tickMs} ms)`);
    const lat = await paced(api, admin, added, stages, latTargets, rate, tickMs);

    progress(`one at a time: ${singles} events`);
    const singleTargets = await registerTargets(api, singles, 50);
    await sleep(500);
    const single = await oneAtATime(api, added, singleTargets);

    const ratio = (v: number) => v / ceiling.callsPerSec;
    printTable(
      "End to end: ingest → continuation job in BullMQ (one Matcher, one Dispatcher, in process)",
      ["", "value"],
      [
        ["throughput, events/s (whole run)", fmt(tp.eventsPerSec)],
        ["throughput, events/s (10 %→90 % of jobs)", fmt(tp.steadyPerSec)],
        ["  ratio to the Lua ceiling", pct(ratio(tp.steadyPerSec))],
        [
          `latency at half rate (${rate}/s) p50 / p99 / max, ms`,
          `${fmt(lat.fromReturn.p50)} / ${fmt(lat.fromReturn.p99)} / ${fmt(lat.fromReturn.max)}`,
        ],
        [
          "latency one at a time p50 (p99 / max), ms",
          `${fmt(single.fromReturn.p50)} (${fmt(single.fromReturn.p99)} / ${fmt(single.fromReturn.max)})`,
        ],
        ["Lua ceiling, calls/s (1 client, 64 in flight)", fmt(ceiling.callsPerSec)],
      ],
    );
    printTable(
      "Details",
      ["", "value"],
      [
        [`events in the throughput run`, `${fmt(tp.events)} in ${fmt(tp.seconds, 2)} s`],
        [
          "ingest alone (accepted), events/s",
          `${fmt(tp.ingestPerSec)} (${pct(ratio(tp.ingestPerSec))} of the ceiling), done after ${fmt(tp.ingestSeconds, 2)} s`,
        ],
        [
          "Redis script calls per event (throughput run)",
          fmt((tp.window.commands.find((c) => c.command === "evalsha")?.calls ?? 0) / waits, 2),
        ],
        [
          "Redis commands per event (throughput run)",
          fmt(tp.window.commands.reduce((s, c) => s + c.calls, 0) / waits, 1),
        ],
        [
          "CPU in the throughput run: redis-server / this process",
          `${pct(tp.window.redisCpu, 0)} / ${pct(tp.window.nodeCpu, 0)} of a core`,
        ],
        [
          "CPU in the latency run: redis-server / this process",
          `${pct(lat.window.redisCpu, 0)} / ${pct(lat.window.nodeCpu, 0)} of a core`,
        ],
        [
          `half rate: accepted (Redis) → added p50 / p99 / max, ms`,
          `${fmt(lat.fromAccepted.p50)} / ${fmt(lat.fromAccepted.p99)} / ${fmt(lat.fromAccepted.max)}`,
        ],
        ["half rate: events without a seen job", lat.missing],
        [
          "one at a time: ingest call → added p50 / p99, ms",
          `${fmt(single.fromCall.p50)} / ${fmt(single.fromCall.p99)}`,
        ],
      ],
    );
    const head = ["stage", "calls", "items/call", "ms/call", "max ms", "busy", "busy µs/event"];
    printTable(
      `Where the time goes: throughput run (${fmt(tp.seconds, 2)} s)`,
      head,
      stageRows(tp.stages, tp.seconds * 1000, waits),
    );
    printTable(
      "Redis time by command: throughput run",
      ["command", "calls", "per event", "ms", "µs/call"],
      tp.window.commands
        .slice(0, 10)
        .map((c) => [
          c.command,
          c.calls,
          Number((c.calls / waits).toFixed(2)),
          Math.round(c.usec / 1000),
          Number(c.usecPerCall.toFixed(1)),
        ]),
    );
    printTable(
      `Where the time goes: half-rate run (${fmt(lat.window.wallMs / 1000, 2)} s)`,
      head,
      stageRows(lat.stages, lat.window.wallMs, lat.events),
    );
    printTable(
      "Cost per event of each step alone (backlog drained in full batches; CPU from INFO cpu and process.cpuUsage)",
      ["step", "seconds", "redis CPU µs/event", "node CPU µs/event", "scripts/event", "µs/script", "commands/event"],
      costs.map((c) => [
        c.stage,
        Number(c.seconds.toFixed(2)),
        Math.round(c.redisUs),
        Math.round(c.nodeUs),
        Number(c.scripts.toFixed(2)),
        Number(c.usPerScript.toFixed(1)),
        Number(c.commands.toFixed(1)),
      ]),
    );
    console.log(`load average (1/5/15 min) at end: ${load()}`);
    const file = saveResults("e2e", {
      costs,
      at: new Date().toISOString(),
      machine: machine(),
      quick,
      ceiling,
      throughput: {
        ...tp,
        stages: Object.fromEntries(tp.stages),
        window: { ...tp.window, commands: tp.window.commands.slice(0, 20) },
      },
      latency: {
        ...lat,
        stages: Object.fromEntries(lat.stages),
        window: { ...lat.window, commands: lat.window.commands.slice(0, 20) },
      },
      single,
    });
    progress(`results written to ${file}`);
  } finally {
    await path.close();
    await admin.quit();
    await server.stop();
  }
}
