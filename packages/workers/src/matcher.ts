/**
 * The matcher: runs `matchEvent` for every entry of the partition streams (competing
 * consumers of group `matchers`), then acknowledges. An entry is acknowledged only
 * after its match (and the resolution's outbox entry, written by the same script)
 * is committed; a matcher killed in between leaves it pending for another matcher,
 * and re-running the match is a no-op.
 */
import { decodeParts, failpoint, MATCHER_GROUP, type Resources, splitEncodings } from "@rendezvous/engine";
import { ConsumerLoop, type StreamEntry } from "./consumer-loop.js";

export interface MatcherOptions {
  /** partitions to serve @defaultValue all */
  partitions?: number[];
  consumer?: string;
  blockMs?: number;
  count?: number;
}

export class Matcher {
  readonly #res: Resources;
  readonly loop: ConsumerLoop;

  constructor(res: Resources, opts: MatcherOptions = {}) {
    this.#res = res;
    const layout = res.store.keys;
    const partitions = opts.partitions ?? layout.allPartitions();
    const logger = res.logger.child({ system: "matcher" });
    this.loop = new ConsumerLoop({
      name: "matcher",
      redis: res.redis,
      blocking: (purpose) => res.connect(purpose, { blocking: true }),
      group: MATCHER_GROUP,
      streams: partitions.map((p) => ({ partition: p, key: layout.partition(p).stream })),
      handle: (p, key, entries) => this.#handle(p, key, entries),
      logger,
      claimIdleMs: res.config.claimIdleMs,
      consumer: opts.consumer,
      blockMs: opts.blockMs,
      count: opts.count,
    });
  }

  start(): Promise<void> {
    return this.loop.start();
  }

  stop(): Promise<void> {
    return this.loop.stop();
  }

  async #handle(partition: number, key: string, entries: StreamEntry[]): Promise<void> {
    const events = entries.flatMap((e) => streamEvents(e));
    const results = await this.#res.store.match(partition, events);
    failpoint("matcher.after-match");
    const now = Date.now();
    const m = this.#res.metrics;
    results.forEach((r, i) => {
      if (r.status === "duplicate" || r.status === "missing") return;
      const acceptedMs = Number(events[i]?.streamId.split("-")[0]);
      m.matchLatency.observe(Math.max(0, now - acceptedMs) / 1000);
      const event = events[i];
      if (r.matched.length > 0 && event) {
        // the event key's first part is its tenant, the tenant of every wait it resolved
        const [tenant = ""] = decodeParts(event.eventKey, 1);
        m.resolutions.inc({ kind: "event", tenant }, r.matched.length);
      }
      if (r.late.length > 0) m.lateEvents.inc(r.late.length);
    });
    await this.loop.ack(
      key,
      entries.map((e) => e.id),
    );
  }
}

/**
 * The events of a stream entry: one entry holds the events one ingest call appended to
 * the partition (`ks`: their encoded event keys, concatenated); entries of earlier
 * versions hold one (`k`).
 */
function streamEvents(entry: StreamEntry): Array<{ streamId: string; eventKey: string }> {
  const f = entry.fields;
  if (f?.ks !== undefined) return splitEncodings(f.ks, 3).map((eventKey) => ({ streamId: entry.id, eventKey }));
  if (f?.k !== undefined) return [{ streamId: entry.id, eventKey: f.k }];
  return [];
}
