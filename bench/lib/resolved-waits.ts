/**
 * Resolved waits for bench:redis-instructions: waits registered and resolved by their
 * events under a prefix of their own by the matcher's script (store.match); the ingest of
 * `rendezvous start`, which matches what it appends (acceptEvents); and a Dispatcher
 * handing resolved waits out.
 */
import {
  type AcceptMatcher,
  type ConfigInput,
  createResources,
  DISPATCHER_GROUP,
  MATCHER_GROUP,
  parseConfig,
  type Resources,
} from "@rendezvous/engine";
import { Dispatcher } from "@rendezvous/workers";
import { pino } from "pino";

export interface BenchEvent {
  id: string;
  type: string;
  correlationId: string;
  payload: Record<string, unknown>;
}

/** The resources of one case, 16 partitions, under `prefix` (`config`: more settings). */
export function benchResources(url: string, prefix: string, config: Partial<ConfigInput> = {}): Resources {
  return createResources({
    redisUrl: url,
    prefix,
    // (under callgrind a step takes some 50× as long: with the default claimIdleMs of 5 s a
    // dispatcher would claim entries still being handed out and count their second
    // dispatch; a crash is not what the cases measure, and no other case runs a consumer)
    config: parseConfig({ partitions: 16, claimIdleMs: 3_600_000, ...config }),
    logger: pino({ level: "silent" }),
  });
}

/**
 * The ingest of `rendezvous start` without its matcher and dispatcher running: the
 * matchers' group of every stream created (caught up), the outbox entries left to the
 * dispatchers' read.
 */
export async function acceptLikeStart(res: Resources): Promise<void> {
  for (const p of res.store.keys.allPartitions()) {
    await res.redis.xgroup("CREATE", res.store.keys.partition(p).stream, MATCHER_GROUP, "0", "MKSTREAM");
  }
  const acceptor: AcceptMatcher = {
    matchers: { group: MATCHER_GROUP, consumer: "bench" },
    handoff: () => undefined,
    accepted: () => {},
  };
  res.store.acceptWith(acceptor);
}

/**
 * The ingest of `rendezvous start` that also adds the continuation jobs of what it resolves
 * (ingestDispatchEvents): as acceptLikeStart, with a Dispatcher (its loops not started) whose
 * consumer the outbox entries are delivered to and whose queue of tenant `tenant` the jobs
 * go to, its job arguments collected before this returns.
 */
export async function acceptLikeStartWithJobs(res: Resources, tenant: string): Promise<void> {
  for (const p of res.store.keys.allPartitions()) {
    const k = res.store.keys.partition(p);
    await res.redis.xgroup("CREATE", k.stream, MATCHER_GROUP, "0", "MKSTREAM");
    await res.redis.xgroup("CREATE", k.outbox, DISPATCHER_GROUP, "0", "MKSTREAM");
  }
  const dispatcher = new Dispatcher(res, { blockMs: 60_000 });
  for (let i = 0; !dispatcher.jobsFor(tenant); i++) {
    if (i > 100) throw new Error("the accept's job arguments were not collected");
    await new Promise((r) => setTimeout(r, 10));
  }
  const acceptor: AcceptMatcher = {
    matchers: { group: MATCHER_GROUP, consumer: "bench" },
    handoff: () => dispatcher.handoff,
    jobs: (t) => dispatcher.jobsFor(t),
    accepted: () => {},
  };
  res.store.acceptWith(acceptor);
}

/** Registers a wait for each event (tenant `bench`), one type each, with `timeoutMs` when given. */
export async function registerFor(res: Resources, events: BenchEvent[], timeoutMs?: number): Promise<void> {
  for (const e of events) {
    await res.store.register("bench", {
      runId: `r-${e.id}`,
      position: "p",
      eventType: e.type,
      correlationId: e.correlationId,
      ...(timeoutMs === undefined ? {} : { timeoutMs }),
    });
  }
}

/** Resolves a wait per event: registered, then its event ingested and matched, in batches. */
export async function resolveWaits(res: Resources, events: BenchEvent[], batch: number): Promise<void> {
  await registerFor(res, events);
  for (let i = 0; i < events.length; i += batch) {
    const chunk = events.slice(i, i + batch);
    const results = await res.store.ingest("bench", "loader", chunk);
    const byPartition = new Map<number, Array<{ streamId: string; eventKey: string }>>();
    results.forEach((r, j) => {
      const e = chunk[j];
      if (r.status !== "accepted" || !e) return;
      const p = res.store.keys.matchPartition("bench", e.type, e.correlationId);
      const list = byPartition.get(p) ?? [];
      list.push({ streamId: r.event.streamId, eventKey: res.store.keys.eventKey("bench", "loader", e.id) });
      byPartition.set(p, list);
    });
    for (const [p, list] of byPartition) await res.store.match(p, list);
  }
}

/** A Dispatcher started on the resources until it has handed out `n` continuations. */
export async function dispatchAll(res: Resources, n: number, step?: number): Promise<void> {
  let dispatched = 0;
  let done: () => void = () => {};
  const all = new Promise<void>((resolve) => {
    done = resolve;
  });
  const counter = res.metrics.continuationsDispatched;
  const inc = counter.inc.bind(counter);
  counter.inc = ((labels: { channel: string }, value: number | undefined = 1) => {
    inc(labels, value);
    dispatched += value;
    if (dispatched >= n) done();
  }) as typeof counter.inc;
  const dispatcher = new Dispatcher(res, { webhookConcurrency: 0, step });
  await dispatcher.start();
  await all;
  await dispatcher.stop();
}
