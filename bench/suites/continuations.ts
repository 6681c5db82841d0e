/**
 * Continuations delivered per second to a host: over HTTP (claim → consume → ack, the
 * client's ContinuationWorker) vs the BullMQ transport (BullMQ worker → consume), same run,
 * same number of resolved waits, same in-process API, on a private redis-server.
 * Each side: `waits` waits registered and resolved (store.deliver), the dispatcher puts
 * them on `continuations.<tenant>`, then one worker (concurrency 32) drains them.
 */
import { ContinuationWorker, HostClient } from "@rendezvous/client";
import { BullmqContinuationWorker } from "@rendezvous/client/bullmq";
import { createResources, parseConfig } from "@rendezvous/engine";
import { Dispatcher } from "@rendezvous/workers";
import { Queue } from "bullmq";
import { pino } from "pino";
import { buildApp } from "../../packages/http/src/app.js";
import { parseArgs } from "../lib/args.js";
import { startBenchRedis } from "../lib/redis.js";
import { load } from "../lib/setup.js";
import { fmt } from "../lib/table.js";

const TENANT = "hosts";
const HOST_KEY = "hk_bench_continuations";
const CONCURRENCY = 32;

export interface ContinuationsResult {
  waits: number;
  httpPerSec: number;
  bullmqPerSec: number;
  ratio: number;
  load: string;
}

export async function continuationsBench(redisUrl: string, waits: number): Promise<ContinuationsResult> {
  const res = createResources({
    redisUrl,
    prefix: "cont",
    config: parseConfig({ partitions: 8, tenants: { [TENANT]: { hostKeys: [HOST_KEY] } } }),
    logger: pino({ level: "warn" }, pino.destination(2)),
  });
  const dispatcher = new Dispatcher(res);
  await dispatcher.start();
  const app = await buildApp({ res, roles: ["api"], running: () => true });
  const base = await app.listen({ port: 0, host: "127.0.0.1" });
  const host = new HostClient({ baseUrl: base, token: HOST_KEY });
  const queue = new Queue(`continuations.${TENANT}`, { connection: res.connect("bench-q"), prefix: res.queuePrefix });
  let round = 0;

  /** Resolves `waits` waits and waits until all of them are waiting in the queue. */
  const prepare = async () => {
    const type = `bench.r${++round}`;
    for (let i = 0; i < waits; i += 200) {
      await Promise.all(
        Array.from({ length: Math.min(200, waits - i) }, (_, j) =>
          res.store.register(TENANT, {
            runId: `r${round}-${i + j}`,
            position: "p",
            eventType: type,
            correlationId: "c",
          }),
        ),
      );
    }
    // one deliver resolves a bounded number of waits: repeat until all are resolved
    for (let done = 0; done < waits; ) {
      const d = await res.store.deliver(TENANT, { eventType: type, correlationId: "c", all: true });
      if (d.delivered.length === 0) throw new Error(`only ${done} of ${waits} waits resolved`);
      done += d.delivered.length;
    }
    while ((await queue.getWaitingCount()) < waits) await new Promise((r) => setTimeout(r, 50));
  };
  const drain = async (start: (done: () => void) => { close(): Promise<void> }) => {
    let handled = 0;
    let finish: () => void = () => undefined;
    const finished = new Promise<void>((r) => {
      finish = r;
    });
    const t0 = performance.now();
    const w = start(() => {
      if (++handled === waits) finish();
    });
    await finished;
    const perSec = waits / ((performance.now() - t0) / 1000);
    await w.close();
    return perSec;
  };

  try {
    await prepare();
    const httpPerSec = await drain(
      (done) =>
        new ContinuationWorker({
          host,
          name: "bench-http",
          concurrency: CONCURRENCY,
          pollMs: 1000,
          handler: async () => done(),
        }),
    );
    await prepare();
    const bullmqPerSec = await drain(
      (done) =>
        new BullmqContinuationWorker({
          tenant: TENANT,
          host,
          name: "bench-bullmq",
          connection: res.connect("bench-bullmq", { blocking: true }),
          prefix: res.queuePrefix,
          concurrency: CONCURRENCY,
          handler: async () => done(),
        }),
    );
    return { waits, httpPerSec, bullmqPerSec, ratio: httpPerSec / bullmqPerSec, load: load() };
  } finally {
    await queue.close();
    await app.close();
    await dispatcher.stop();
    await res.close();
  }
}

export async function main(): Promise<void> {
  const args = parseArgs();
  const waits = args.number("waits", 2000);
  const server = await startBenchRedis(10 * 60_000);
  try {
    console.log(`load average (1/5/15 min) at start: ${load()}`);
    const r = await continuationsBench(server.url, waits);
    console.log(`continuations to a host, ${fmt(waits)} resolved waits each, worker concurrency ${CONCURRENCY}:`);
    console.log(`  HTTP claim → consume → ack:  ${fmt(r.httpPerSec)}/s`);
    console.log(`  BullMQ transport → consume:  ${fmt(r.bullmqPerSec)}/s`);
    console.log(`  ratio HTTP / BullMQ:         ${r.ratio.toFixed(2)}`);
    console.log(`load average (1/5/15 min) at end: ${r.load}`);
  } finally {
    await server.stop();
  }
}
