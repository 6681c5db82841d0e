import type { EventInput } from "@rendezvous/protocol";
import { redisUrl, trackOpen, uniquePrefix } from "@rendezvous/testkit";
import {
  type ConfigInput,
  createRedis,
  MATCHER_GROUP,
  parseConfig,
  type RedisLike,
  Store,
  splitEncodings,
} from "../src/index.js";

export interface Harness {
  store: Store;
  redis: RedisLike;
  prefix: string;
  /** the fixed clock (ms); move it with `tick` */
  clock: { now: number };
  tick(ms: number): number;
}

export const T0 = 1_800_000_000_000;

/**
 * A Store on the run's private Redis with a unique prefix. With `fixedClock` the
 * transitions use a clock the test moves; otherwise Redis TIME.
 */
export function makeStore(config: Partial<ConfigInput> = {}, fixedClock = true): Harness {
  const redis = trackOpen(createRedis(redisUrl(), { name: "test" }));
  const prefix = uniquePrefix();
  const clock = { now: T0 };
  const store = new Store({
    redis,
    prefix,
    config: parseConfig({ partitions: 4, ...config }),
    clock: fixedClock ? () => clock.now : undefined,
  });
  return {
    store,
    redis,
    prefix,
    clock,
    tick(ms) {
      clock.now += ms;
      return clock.now;
    },
  };
}

export function event(id: string, correlationId: string, extra: Partial<EventInput> = {}): EventInput {
  return { id, type: "job.done", correlationId, payload: { n: id }, ...extra };
}

/** Ingests one event and returns its stream id and event key. */
export async function ingestOne(h: Harness, e: EventInput, tenant = "acme", producer = "svc") {
  const [result] = await h.store.ingest(tenant, producer, [e]);
  if (!result || result.status === "rejected") throw new Error(`ingest refused: ${JSON.stringify(result)}`);
  return {
    result,
    streamId: result.event.streamId,
    eventKey: h.store.keys.eventKey(tenant, producer, e.id),
    partition: h.store.keys.matchPartition(tenant, e.type, e.correlationId),
  };
}

/** Runs the match for one ingested event. */
export async function matchOne(h: Harness, ingested: { partition: number; streamId: string; eventKey: string }) {
  const [r] = await h.store.match(ingested.partition, [{ streamId: ingested.streamId, eventKey: ingested.eventKey }]);
  if (!r) throw new Error("no match result");
  return r;
}

/**
 * Does what a matcher does to a partition stream (without the matcher package): creates
 * the matchers' consumer group when missing, reads up to `count` undelivered entries
 * through it and, unless `ack` is false, matches their events and acknowledges them.
 * Returns the entries read (`id`, `eventKeys`).
 */
export async function processEntries(h: Harness, partition: number, opts: { count?: number; ack?: boolean } = {}) {
  const key = h.store.keys.partition(partition).stream;
  await h.redis.xgroup("CREATE", key, MATCHER_GROUP, "0", "MKSTREAM").catch((err: Error) => {
    if (!String(err.message).includes("BUSYGROUP")) throw err;
  });
  const reply = (await h.redis.xreadgroup(
    "GROUP",
    MATCHER_GROUP,
    "test",
    "COUNT",
    opts.count ?? 1000,
    "STREAMS",
    key,
    ">",
  )) as Array<[string, Array<[string, string[]]>]> | null;
  const entries = (reply?.[0]?.[1] ?? []).map(([id, fields]) => ({
    id,
    eventKeys: splitEncodings(fields[fields.indexOf("ks") + 1] ?? "", 3),
  }));
  if (opts.ack !== false && entries.length > 0) {
    await h.store.match(
      partition,
      entries.flatMap((e) => e.eventKeys.map((eventKey) => ({ streamId: e.id, eventKey }))),
    );
    await h.redis.xack(key, MATCHER_GROUP, ...entries.map((e) => e.id));
  }
  return entries;
}
