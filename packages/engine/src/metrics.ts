/**
 * The Prometheus metrics every role shares (prom-client). One set per registry;
 * roles increment them, the server exposes the registry at /metrics.
 */
import { Counter, Gauge, Histogram, Registry } from "prom-client";

export interface Metrics {
  readonly registry: Registry;
  /** events appended, by tenant */
  readonly eventsAccepted: Counter<"tenant">;
  /** events answered as duplicates, by tenant */
  readonly eventsDuplicate: Counter<"tenant">;
  /** events refused, by reason (an docs/api.md error code) and tenant ({@link UNKNOWN_TENANT} before one is known) */
  readonly eventsRejected: Counter<"reason" | "tenant">;
  /** waits settled, by kind (event, timeout, cancel, deliver) and tenant */
  readonly resolutions: Counter<"kind" | "tenant">;
  /** events recorded as late on a wait */
  readonly lateEvents: Counter;
  /** accepted → matched, seconds */
  readonly matchLatency: Histogram;
  /** timeout fired − deadline, seconds, by tenant */
  readonly timeoutLateness: Histogram<"tenant">;
  /** continuations handed to a queue or webhook, by channel */
  readonly continuationsDispatched: Counter<"channel">;
  /** outbox entries a match delivered straight to the dispatcher of its own process (`rendezvous start`) */
  readonly outboxHandoffs: Counter;
  /** events matched in the append that accepted them (acceptEvents: `rendezvous start`) */
  readonly acceptMatches: Counter;
  /** continuation jobs added in the script that resolved their waits (ingestDispatchEvents: `rendezvous start`) */
  readonly acceptContinuations: Counter;
  /** requests refused by a quota (docs/api.md, Quotas), by quota and tenant (an authenticated, configured one) */
  readonly quotaRefusals: Counter<"quota" | "tenant">;
  /** the registry version this process serves (0 before it has read one) */
  readonly registryVersion: Gauge;
  /** registry reloads, by result (ok, failed) */
  readonly registryReloads: Counter<"result">;
}

/**
 * The `tenant` label of a refusal made before any configured tenant is known (a credential that
 * names none, a body refused before its credential is read): a caller's claim is never a label value.
 */
export const UNKNOWN_TENANT = "unknown";

export function createMetrics(registry: Registry = new Registry()): Metrics {
  const on = { registers: [registry] };
  return {
    registry,
    eventsAccepted: new Counter({
      name: "rendezvous_events_accepted_total",
      help: "Events durably appended",
      labelNames: ["tenant"],
      ...on,
    }),
    eventsDuplicate: new Counter({
      name: "rendezvous_events_duplicate_total",
      help: "Events answered as duplicates of an earlier send",
      labelNames: ["tenant"],
      ...on,
    }),
    eventsRejected: new Counter({
      name: "rendezvous_events_rejected_total",
      help: "Events refused, by reason and tenant",
      labelNames: ["reason", "tenant"],
      ...on,
    }),
    resolutions: new Counter({
      name: "rendezvous_resolutions_total",
      help: "Waits settled, by kind and tenant",
      labelNames: ["kind", "tenant"],
      ...on,
    }),
    lateEvents: new Counter({ name: "rendezvous_late_events_total", help: "Events recorded as late", ...on }),
    matchLatency: new Histogram({
      name: "rendezvous_match_latency_seconds",
      help: "Time from an event's acceptance to its match",
      buckets: [0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      ...on,
    }),
    timeoutLateness: new Histogram({
      name: "rendezvous_timeout_lateness_seconds",
      help: "Time from a wait's deadline to its timeout",
      labelNames: ["tenant"],
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      ...on,
    }),
    continuationsDispatched: new Counter({
      name: "rendezvous_continuations_dispatched_total",
      help: "Continuations handed out, by channel (queue, webhook)",
      labelNames: ["channel"],
      ...on,
    }),
    outboxHandoffs: new Counter({
      name: "rendezvous_outbox_handoffs_total",
      help: "Outbox entries a match handed straight to the dispatcher of its process, without a blocking read",
      ...on,
    }),
    acceptMatches: new Counter({
      name: "rendezvous_accept_matches_total",
      help: "Events matched in the script that appended them, the matcher's read not woken for them",
      ...on,
    }),
    acceptContinuations: new Counter({
      name: "rendezvous_accept_continuations_total",
      help: "Continuation jobs added in the script that resolved their waits, no dispatcher step between them",
      ...on,
    }),
    quotaRefusals: new Counter({
      name: "rendezvous_quota_refusals_total",
      help: "Requests refused by a quota (waitingWaits, bufferedEvents, hostRequestsPerSec, producerEventsPerSec, rateLimitPerSec), by tenant",
      labelNames: ["quota", "tenant"],
      ...on,
    }),
    registryVersion: new Gauge({
      name: "rendezvous_registry_version",
      help: "The registry version this process serves",
      ...on,
    }),
    registryReloads: new Counter({
      name: "rendezvous_registry_reloads_total",
      help: "Registry reloads, by result (ok, failed)",
      labelNames: ["result"],
      ...on,
    }),
  };
}
