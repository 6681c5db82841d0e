/**
 * Quota fairness (docs/api.md, Quotas; `npm run bench` scenario 11, or alone:
 * `npx tsx --tsconfig tsconfig.source.json bench/quota-fairness.ts [--quick]`).
 *
 * Tenant `flood` has `producerEventsPerSec` = R and floods: a few senders in a loop, each
 * request a batch checked against the quota first (as the producer routes do) and, when
 * it passes, ingested; a refused one is retried 5 ms later (a client hammering at its
 * limit). Its events resolve pre-registered waits, so the matcher and the dispatcher
 * carry the flood too. Tenant `calm` (a quota far above what it uses, so its check runs)
 * sends one event at a time, each resolving one of its waits; per event, the time from
 * the ingest call's return (accepted) to the continuation job added to
 * `continuations.calm` (the Redis time of the queue's `added` event). Its p99 is
 * measured alone, then while `flood` floods; the ratio is the result. One Matcher and
 * one Dispatcher in this process, each on its own connections.
 */
import { randomUUID } from "node:crypto";
import { createResources, parseConfig, type Resources } from "@rendezvous/engine";
import { continuationQueueName, Dispatcher, Matcher } from "@rendezvous/workers";
import { QueueEvents } from "bullmq";
import { pino } from "pino";
import { parseArgs } from "./lib/args.js";
import { runPool } from "./lib/pool.js";
import { startBenchRedis } from "./lib/redis.js";
import { type Summary, sleep, summarize } from "./lib/stats.js";
import { fmt, progress } from "./lib/table.js";

const TYPE = "order.paid";
const PRODUCER = "payments";

export interface FairnessOptions {
  partitions: number;
  /** events `calm` sends one at a time, per phase */
  singles: number;
  /** `flood`'s producerEventsPerSec */
  floodRate: number;
  /** events per flood request */
  floodBatch: number;
  /** concurrent flood senders */
  floodSenders: number;
}

export interface FairnessResult {
  options: FairnessOptions;
  alone: Summary;
  flooded: Summary;
  /** flooded p99 / alone p99 */
  ratioP99: number;
  /** flood events accepted per second while `calm` measured, and requests refused */
  floodAcceptedPerSec: number;
  floodRefused: number;
}

interface Target {
  waitId: string;
  correlationId: string;
}

async function register(api: Resources, tenant: string, count: number): Promise<Target[]> {
  const out: Target[] = new Array(count);
  const base = randomUUID().slice(0, 8);
  await runPool(count, 200, async (i) => {
    const correlationId = `${base}-${i}`;
    const { wait } = await api.store.register(tenant, {
      runId: `run-${base}-${i}`,
      position: "p",
      eventType: TYPE,
      correlationId,
      timeoutMs: 3_600_000,
    });
    out[i] = { waitId: wait.id, correlationId };
  });
  return out;
}

let seq = 0;
const event = (t: Target) => ({
  id: `ev-${seq++}-${t.correlationId}`,
  type: TYPE,
  correlationId: t.correlationId,
  payload: { orderId: t.correlationId, amount: 4200 },
});

/** One event of `calm` at a time: ingest return → continuation added (Redis time), ms. */
async function singles(api: Resources, added: Map<string, number>, targets: Target[]): Promise<number[]> {
  const out: number[] = [];
  for (const t of targets) {
    const refusal = await api.store.quotas.check({
      tenant: "calm",
      count: "bufferedEvents",
      rate: "producerEventsPerSec",
    });
    if (refusal !== null) throw new Error(`calm refused: ${JSON.stringify(refusal)}`);
    const [r] = await api.store.ingest("calm", PRODUCER, [event(t)]);
    if (r?.status !== "accepted") throw new Error(`calm event not accepted: ${r?.status}`);
    const accepted = Number(r.event.streamId.split("-")[0]);
    const until = Date.now() + 10_000;
    while (!added.has(t.waitId)) {
      if (Date.now() > until) throw new Error(`continuation of ${t.waitId} not added within 10 s`);
      await sleep(1);
    }
    out.push((added.get(t.waitId) as number) - accepted);
  }
  return out;
}

export async function quotaFairness(url: string, options: FairnessOptions): Promise<FairnessResult> {
  const config = parseConfig({
    partitions: options.partitions,
    quotas: { bufferedEvents: 10_000_000 },
    tenants: {
      flood: { quotas: { producerEventsPerSec: options.floodRate } },
      calm: { quotas: { producerEventsPerSec: 1_000_000 } },
    },
  });
  const logger = pino({ level: "warn" }, pino.destination(2));
  const make = () => createResources({ redisUrl: url, prefix: `qf${Date.now().toString(36)}`, config, logger });
  const api = make();
  const prefix = api.prefix;
  const same = () => createResources({ redisUrl: url, prefix, config, logger });
  const matcherRes = same();
  const dispatcherRes = same();
  const matcher = new Matcher(matcherRes);
  const dispatcher = new Dispatcher(dispatcherRes);
  const added = new Map<string, number>();
  const events = new QueueEvents(continuationQueueName("calm"), {
    connection: api.connect("bench-qf-events", { blocking: true }),
    prefix,
  });
  events.on("added", ({ jobId }, id) => added.set(jobId, Number(id.split("-")[0])));
  try {
    await events.waitUntilReady();
    await matcher.start();
    await dispatcher.start();
    progress("registering calm's waits");
    const calm = await register(api, "calm", 2 * options.singles);
    // enough flood waits for the flood phase at its rate (generous: 30 s)
    const floodWaits = Math.min(options.floodRate * 30, 200_000);
    progress(`registering ${fmt(floodWaits)} flood waits`);
    const flood = await register(api, "flood", floodWaits);

    progress("calm alone");
    const alone = await singles(api, added, calm.slice(0, options.singles));

    let stop = false;
    let next = 0;
    let accepted = 0;
    let refused = 0;
    const sender = async () => {
      while (!stop && next < flood.length) {
        const refusal = await api.store.quotas.check({
          tenant: "flood",
          count: "bufferedEvents",
          rate: "producerEventsPerSec",
          n: options.floodBatch,
        });
        if (refusal !== null) {
          refused++;
          await sleep(5);
          continue;
        }
        const batch = flood.slice(next, next + options.floodBatch);
        next += batch.length;
        const results = await api.store.ingest("flood", PRODUCER, batch.map(event));
        accepted += results.filter((r) => r.status === "accepted").length;
      }
    };
    const senders = Array.from({ length: options.floodSenders }, sender);
    await sleep(1000); // the flood at its limit before calm measures
    progress("calm while flood floods");
    const acceptedBefore = accepted;
    const started = performance.now();
    const flooded = await singles(api, added, calm.slice(options.singles));
    const seconds = (performance.now() - started) / 1000;
    const floodAcceptedPerSec = (accepted - acceptedBefore) / seconds;
    stop = true;
    await Promise.all(senders);
    const a = summarize(alone);
    const f = summarize(flooded);
    return { options, alone: a, flooded: f, ratioP99: f.p99 / a.p99, floodAcceptedPerSec, floodRefused: refused };
  } finally {
    await matcher.stop();
    await dispatcher.stop();
    await events.close();
    await Promise.all([api.close(), matcherRes.close(), dispatcherRes.close()]);
  }
}

export function fairnessOptions(quick: boolean): FairnessOptions {
  const args = parseArgs();
  return {
    partitions: args.number("partitions", 16),
    singles: args.number("fairness-singles", quick ? 50 : 300),
    floodRate: args.number("flood-rate", quick ? 500 : 1000),
    floodBatch: args.number("flood-batch", 50),
    floodSenders: args.number("flood-senders", 4),
  };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const quick = parseArgs().flag("quick");
  const server = await startBenchRedis(quick ? 120_000 : 15 * 60_000);
  try {
    const r = await quotaFairness(server.url, fairnessOptions(quick));
    console.log(
      `calm p99 accepted → continuation: alone ${fmt(r.alone.p99)} ms, flooded ${fmt(r.flooded.p99)} ms (×${r.ratioP99.toFixed(2)}); flood accepted ${fmt(r.floodAcceptedPerSec)}/s at a limit of ${fmt(r.options.floodRate)}/s, ${fmt(r.floodRefused)} requests refused`,
    );
    console.log(`QUOTA_FAIRNESS_JSON ${JSON.stringify(r)}`);
  } finally {
    await server.stop();
  }
}
