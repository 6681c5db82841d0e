/**
 * The black-box benchmark's rows (bench/suites/blackbox.ts runs them per configuration):
 * waits registered over HTTP, then events sent one per request or in batches, or one at a
 * time; what each row measures is in the suite's header. `Context` is what a row needs of
 * its configuration's run.
 */
import type { Redis } from "ioredis";
import {
  BATCH,
  BATCH_IN_FLIGHT,
  type Configuration,
  type HopName,
  type LatencyRow,
  SINGLE_IN_FLIGHT,
  type ThroughputRow,
  type Tracing,
} from "./blackbox-report.js";
import type { Poster } from "./http-post.js";
import { runPool } from "./pool.js";
import { cpuSnapshot, markThreads, threadsSince } from "./product.js";
import type { Arrivals, Transport } from "./receivers.js";
import { quiesce } from "./redis.js";
import { socketOwners, startBreakdown } from "./redis-breakdown.js";
import { type Chain, RedisTimeline } from "./redis-timeline.js";
import { sleep, summarize } from "./stats.js";
import { fmt, progress } from "./table.js";

export const TENANT = "acme";
export const HOST_KEY = "hk_blackbox";
export const PRODUCER_KEY = "pk_blackbox";
const EVENT_TYPE = "bench.done";
export const CONCURRENCY = 50;

const producerHeaders = {
  authorization: `Bearer ${PRODUCER_KEY}`,
  "rendezvous-producer": `${TENANT}/svc`,
};

let labels = 0;

/** Registers `n` waits over HTTP (64 in flight); their correlation ids, in order, and wait ids. */
async function register(http: Poster, n: number): Promise<{ correlationIds: string[]; waitIds: string[] }> {
  const label = `b${process.pid}x${++labels}`;
  const correlationIds = Array.from({ length: n }, (_, i) => `${label}-${i}`);
  const waitIds: string[] = new Array(n);
  const headers = { authorization: `Bearer ${HOST_KEY}` };
  await runPool(n, 64, async (i) => {
    const id = correlationIds[i] as string;
    const body = { runId: id, position: "p", eventType: EVENT_TYPE, correlationId: id, timeoutMs: 3_600_000 };
    const r = JSON.parse(await http.post("/v1/waits", headers, body, 201)) as { wait: { id: string } };
    waitIds[i] = r.wait.id;
  });
  return { correlationIds, waitIds };
}

const event = (correlationId: string) => ({ id: `e-${correlationId}`, type: EVENT_TYPE, correlationId });

/** Sends one event per correlation id: one per request (64 in flight) or in batches (100, 4 in flight). */
async function send(http: Poster, correlationIds: string[], producers: "single" | "batch"): Promise<void> {
  if (producers === "single") {
    await runPool(correlationIds.length, SINGLE_IN_FLIGHT, async (i) => {
      await http.post("/v1/events", producerHeaders, event(correlationIds[i] as string), 202);
    });
    return;
  }
  await runPool(Math.ceil(correlationIds.length / BATCH), BATCH_IN_FLIGHT, async (b) => {
    const events = correlationIds.slice(b * BATCH, (b + 1) * BATCH).map(event);
    await http.post("/v1/events/batch", producerHeaders, { events }, 200);
  });
}

/** Every arrival, or an error naming how many are missing after `maxMs`. */
async function arrivalsOf(arrivals: Arrivals, expected: Array<Promise<number>>, maxMs: number): Promise<number[]> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new Error(`${arrivals.outstanding} continuations not received after ${maxMs} ms`)),
      maxMs,
    );
  });
  try {
    return await Promise.race([Promise.all(expected), timeout]);
  } finally {
    clearTimeout(timer);
  }
}

export interface Context {
  config: Configuration;
  tracing: Tracing;
  /** events sent so far (warm-ups included) */
  sent: { events: number };
  /** keep-alive connections to the API (as many as requests in flight) */
  http: Poster;
  admin: Redis;
  arrivals: Arrivals;
  pids: Record<string, number>;
  redisUrl: string;
  redisPid: number;
  ceiling: number;
  /** --breakdown: log every Redis command of the measured rows' event phases */
  breakdown: boolean;
}

/** N waits, then N events resolving them; events/s and CPU per event over the event phase. */
export async function throughputRow(
  ctx: Context,
  transport: Transport,
  producers: "single" | "batch",
  n: number,
  warmup = false,
): Promise<ThroughputRow> {
  progress(`${ctx.config}: registering ${fmt(n)} waits`);
  const { correlationIds, waitIds } = await register(ctx.http, n);
  await quiesce(ctx.admin);
  const pids = { ...ctx.pids, redis: ctx.redisPid };
  // the idle cost: CPU of the same processes over a second with nothing to do
  const idle0 = cpuSnapshot(pids);
  const idleFrom = performance.now();
  await sleep(1000);
  const idle1 = cpuSnapshot(pids);
  const idleSeconds = (performance.now() - idleFrom) / 1000;
  progress(`${ctx.config}: ${fmt(n)} events (${producers}, ${transport} worker)`);
  const expected = waitIds.map((id) => ctx.arrivals.expect(id));
  ctx.sent.events += n;
  // every command of the phase logged (set last before the phase starts, undone after it ends)
  const logged = ctx.breakdown && !warmup ? await startBreakdown(ctx.admin, Math.min(4_000_000, n * 120)) : undefined;
  const mark = markThreads(pids);
  const cpu0 = cpuSnapshot(pids);
  const driver0 = process.cpuUsage();
  const t0 = performance.now();
  const sending = send(ctx.http, correlationIds, producers);
  sending.catch(() => undefined);
  const at = await arrivalsOf(ctx.arrivals, expected, 60_000 + n * 10).catch(async (err: unknown) => {
    // a failed row leaves a --redis-url server as it found it (SLOWLOG settings restored)
    await logged?.(new Map()).catch(() => undefined);
    throw err;
  });
  const cpu1 = cpuSnapshot(pids);
  const threads = threadsSince(mark, pids);
  const driver = process.cpuUsage(driver0);
  const redisPort = Number(new URL(ctx.redisUrl).port);
  const owners = logged && socketOwners({ ...ctx.pids, driver: process.pid }, redisPort);
  const redisBreakdown = logged && owners ? await logged(owners) : undefined;
  await sending;
  const seconds = (Math.max(...at) - t0) / 1000;
  const us = (name: string) => (((cpu1[name] as number) - (cpu0[name] as number)) * 1e6) / n;
  const byProcess = Object.fromEntries(Object.keys(ctx.pids).map((name) => [name, us(name)]));
  const product = Object.values(byProcess).reduce((s, v) => s + v, 0);
  const redis = us("redis");
  const idleMs = (names: string[]) =>
    (names.reduce((sum, k) => sum + (idle1[k] as number) - (idle0[k] as number), 0) * 1000) / idleSeconds;
  return {
    config: ctx.config,
    tracing: ctx.tracing,
    producers,
    transport,
    events: n,
    seconds,
    eventsPerSec: n / seconds,
    ofCeiling: n / seconds / ctx.ceiling,
    cpu: { product, redis, sum: product + redis, byProcess, driver: (driver.user + driver.system) / n },
    idle: { product: idleMs(Object.keys(ctx.pids)), redis: idleMs(["redis"]) },
    ...threads,
    ...(redisBreakdown ? { redisBreakdown } : {}),
  };
}

/** M events one at a time: send → continuation received, each after the previous one arrived. */
export async function latencyRow(
  ctx: Context,
  transport: Transport,
  m: number,
  timeline?: RedisTimeline,
): Promise<LatencyRow> {
  progress(`${ctx.config}: registering ${fmt(m)} waits`);
  const { correlationIds, waitIds } = await register(ctx.http, m);
  await quiesce(ctx.admin);
  await sleep(500);
  progress(`${ctx.config}: ${fmt(m)} events one at a time (${transport} worker)`);
  const ms: number[] = [];
  const hops: Record<HopName, number[]> = { answer: [], accept: [], match: [], dispatch: [], wake: [], invoke: [] };
  // performance.now() as epoch ms, to compare with the times the continuation carries
  const epoch = (t: number) => performance.timeOrigin + t;
  const pids = { ...ctx.pids, redis: ctx.redisPid };
  const mark = markThreads(pids);
  const cpu0 = cpuSnapshot(pids);
  ctx.arrivals.keepMarks = true;
  ctx.sent.events += m;
  for (let i = 0; i < m; i++) {
    const waitId = waitIds[i] as string;
    const arrived = ctx.arrivals.expect(waitId);
    const sent = event(correlationIds[i] as string);
    const traced = timeline?.begin(sent.id, waitId);
    const t0 = performance.now();
    await ctx.http.post("/v1/events", producerHeaders, sent, 202);
    const answered = performance.now();
    const [at] = await arrivalsOf(ctx.arrivals, [arrived], 30_000);
    if (traced) timeline?.end(traced, epoch(t0), epoch(at as number));
    ms.push((at as number) - t0);
    hops.answer.push(answered - t0);
    const k = ctx.arrivals.marksOf(waitId);
    if (!k) continue;
    // (the product's marks are whole ms: each hop's mean is what its sum is made of)
    hops.accept.push(k.accepted - epoch(t0));
    hops.match.push(k.matched - k.accepted);
    hops.dispatch.push(k.created - k.matched);
    hops.wake.push(k.active - k.created);
    hops.invoke.push(epoch(at as number) - k.active);
  }
  const cpu1 = cpuSnapshot(pids);
  const { phase, mainThreads, byThread } = threadsSince(mark, pids);
  ctx.arrivals.keepMarks = false;
  const us = (names: string[]) =>
    (names.reduce((sum, k) => sum + (cpu1[k] as number) - (cpu0[k] as number), 0) * 1e6) / m;
  const byProcess = Object.fromEntries(Object.keys(ctx.pids).map((name) => [name, us([name])]));
  const cpu = { product: us(Object.keys(ctx.pids)), redis: us(["redis"]), byProcess };
  const perHop = Object.fromEntries(
    Object.entries(hops)
      .filter(([, v]) => v.length > 0)
      .map(([name, v]) => [name, summarize(v)]),
  ) as LatencyRow["hops"];
  const latency = summarize(ms);
  return {
    config: ctx.config,
    tracing: ctx.tracing,
    transport,
    latency,
    hops: perHop,
    cpu,
    phase,
    mainThreads,
    byThread,
  };
}

/** --timeline: the BullMQ one-at-a-time row again, under a MONITOR connection (redis-timeline.ts). */
export async function chainRow(ctx: Context, m: number, unmonitoredP50: number | undefined): Promise<Chain> {
  const timeline = new RedisTimeline(ctx.redisUrl);
  await timeline.start();
  try {
    await latencyRow(ctx, "bullmq", m, timeline);
  } finally {
    await timeline.stop();
  }
  return { config: ctx.config, tracing: ctx.tracing, unmonitoredP50, ...timeline.summary() };
}
