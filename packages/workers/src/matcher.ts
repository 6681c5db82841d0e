/**
 * The matcher: runs `matchEvent` for every entry of the partition streams (competing
 * consumers of group `matchers`), then acknowledges. An entry is acknowledged only
 * after its match (and the resolution's outbox entry, written by the same script)
 * is committed; a matcher killed in between leaves it pending for another matcher,
 * and re-running the match is a no-op.
 *
 * Tracing: an event accepted with a trace context is matched in a span of that trace
 * (`rendezvous.match`, a consumer span, child of it; the registration contexts of the
 * waits it resolved as links), whose context goes on the resolutions' outbox entries.
 * In a process that does not trace the event's context goes on as it came.
 */
import {
  type AcceptJobs,
  type AcceptMatcher,
  ConsumerLoop,
  decodeParts,
  EVENT_FEED,
  type EventEntry,
  failpoint,
  type Handoff,
  MATCHER_GROUP,
  type MatchResult,
  type Resources,
  type StreamEntry,
  type StreamEvent,
  type TraceSpan,
  traceOfText,
  traceText,
} from "@rendezvous/engine";

export interface MatcherOptions {
  /** partitions to serve @defaultValue all */
  partitions?: number[];
  consumer?: string;
  blockMs?: number;
  count?: number;
  /**
   * The dispatcher of this process, to which the match hands the outbox entries it
   * wrote at once (`rendezvous start`, no failpoint armed): delivered to its consumer in
   * the match script, handed out without its blocking read. Absent: the dispatchers read
   * the outbox (split roles).
   */
  dispatcher?: {
    readonly handoff: Handoff | undefined;
    take(partition: number, entries: StreamEntry[]): Promise<void>;
    /** the queue on which the accept adds the jobs of `tenant`'s waits itself (Dispatcher.jobsFor) */
    jobsFor?(tenant: string): AcceptJobs | undefined;
  };
}

export class Matcher {
  readonly #res: Resources;
  readonly loop: ConsumerLoop<EventEntry>;
  readonly #dispatcher: MatcherOptions["dispatcher"];

  constructor(res: Resources, opts: MatcherOptions = {}) {
    this.#res = res;
    this.#dispatcher = opts.dispatcher;
    const partitions = opts.partitions ?? res.store.keys.allPartitions();
    const logger = res.logger.child({ system: "matcher" });
    this.loop = new ConsumerLoop({
      name: "matcher",
      redis: res.redis,
      blocking: (purpose) => res.connect(purpose, { blocking: true }),
      keys: res.store.keys,
      feed: EVENT_FEED,
      partitions,
      handle: (p, entries) => this.#handle(p, entries),
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

  async #handle(partition: number, entries: EventEntry[]): Promise<void> {
    const events = entries.flatMap((e) => e.events);
    const tracing = this.#res.tracing;
    const spans = tracing.enabled ? events.map((e) => this.#matchSpan(partition, e)) : undefined;
    // untraced here: each event's context (if any) goes on as it came; nothing when none has one
    const traces = spans
      ? spans.map((s) => traceText(s.carrier))
      : events.some((e) => e.trace)
        ? events.map((e) => traceText(e.trace))
        : undefined;
    let results: Awaited<ReturnType<Resources["store"]["match"]>>;
    try {
      const dispatcher = this.#dispatcher;
      const handoff = dispatcher?.handoff;
      // handed out as soon as the match answers, beside the rest of this handling
      results = await this.#res.store.match(
        partition,
        events,
        traces,
        handoff && dispatcher ? { to: handoff, take: (handed) => void dispatcher.take(partition, handed) } : undefined,
      );
    } catch (err) {
      for (const s of spans ?? []) {
        s.fail(err);
        s.end();
      }
      throw err;
    }
    if (spans) {
      results.forEach((r, i) => {
        const span = spans[i] as TraceSpan;
        span.setAttributes({
          "rendezvous.match.status": r.status,
          "rendezvous.waits.matched": r.matched.length,
          "rendezvous.waits.late": r.late.length,
        });
        if (r.registrations) span.addLinks(r.registrations.map(traceOfText));
        span.end();
      });
    }
    failpoint("matcher.after-match");
    this.#noteResults(events, results);
    await this.loop.ack(
      partition,
      entries.map((e) => e.id),
    );
  }

  /** The match metrics of events' results (event i's result i). */
  #noteResults(events: readonly StreamEvent[], results: readonly MatchResult[]): void {
    const now = Date.now();
    const m = this.#res.metrics;
    results.forEach((r, i) => {
      if (r.status === "duplicate" || r.status === "missing") return;
      const acceptedMs = Number(events[i]?.streamId.split("-")[0]);
      m.matchLatency.observe(Math.max(0, now - acceptedMs) / 1000);
      const event = events[i];
      // (the waits that only collected the event, count-N waits short of N, are not resolved)
      const resolved = r.matched.length - r.collected.length;
      if (resolved > 0 && event) {
        // the event key's first part is its tenant, the tenant of every wait it resolved
        const [tenant = ""] = decodeParts(event.eventKey, 1);
        m.resolutions.inc({ kind: "event", tenant }, resolved);
      }
      if (r.late.length > 0) m.lateEvents.inc(r.late.length);
    });
  }

  /**
   * This matcher as the one the ingest of its process leaves the match of what it
   * appends to (acceptEvents: `rendezvous start` without a failpoint armed or tracing,
   * server/roles.ts); the outbox entries those matches write go to `dispatcher` at once.
   */
  acceptor(dispatcher: NonNullable<MatcherOptions["dispatcher"]>): AcceptMatcher {
    return {
      matchers: { group: MATCHER_GROUP, consumer: this.loop.consumer },
      handoff: () => dispatcher.handoff,
      jobs: (tenant) => dispatcher.jobsFor?.(tenant),
      accepted: (partition, events, results, handed, dispatched) => {
        // (at the next turn: the API's 202 goes out first, docs/architecture.md)
        if (handed) setImmediate(() => void dispatcher.take(partition, handed));
        if (dispatched > 0) {
          this.#res.metrics.continuationsDispatched.inc({ channel: "queue" }, dispatched);
          this.#res.metrics.acceptContinuations.inc(dispatched);
        }
        this.#res.metrics.acceptMatches.inc(results.length);
        this.#noteResults(events, results);
      },
    };
  }

  #matchSpan(partition: number, event: StreamEvent): TraceSpan {
    return this.#res.tracing.start("rendezvous.match", {
      kind: "consumer",
      parent: event.trace,
      attributes: {
        "messaging.system": "rendezvous",
        "messaging.operation.type": "process",
        "messaging.operation.name": "match",
        "messaging.destination.name": `events.p${partition}`,
        "messaging.message.id": event.streamId,
        "rendezvous.partition": partition,
      },
    });
  }
}
