import { redisUrl, trackOpen, uniquePrefix } from "@rendezvous/testkit";
import { type ConfigInput, createRedis, type EventInput, parseConfig, type RedisLike, Store } from "../src/index.js";

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
