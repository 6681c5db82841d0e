/**
 * The console's live numbers: a sampler that reads this process's counters (events
 * accepted / duplicate / rejected, timeout lateness) every `everyMs` and keeps the
 * last `keep` samples, so the overview can draw rates and lateness over the last
 * minutes. The counters are the ones /metrics exposes; with several api processes
 * each console shows its own process's traffic (Prometheus sums them all).
 */
import type { Metrics } from "@rendezvous/core";

export interface Sample {
  /** ms since the epoch */
  at: number;
  /** events accepted so far, by tenant */
  accepted: Record<string, number>;
  /** events answered as duplicates so far, by tenant */
  duplicate: Record<string, number>;
  /** events refused so far (all tenants: the counter is by reason) */
  rejected: number;
  /** refused so far, by reason */
  rejectedByReason: Record<string, number>;
  /** timeouts fired so far and the sum of their lateness (s) */
  lateness: { count: number; sum: number };
  /** waits settled so far, by kind */
  resolutions: Record<string, number>;
}

/** One point of a chart: per-second rates and the mean lateness over the interval before `at`. */
export interface RatePoint {
  at: string;
  accepted: number;
  duplicate: number;
  /** null for a host key: refusals are not counted per tenant */
  rejected: number | null;
  /** mean timeout lateness (ms) of the timeouts fired in the interval, null when none fired */
  latenessMs: number | null;
}

async function byLabel(
  metric: { get(): Promise<{ values: Array<{ value: number; labels: object }> }> },
  label: string,
) {
  const out: Record<string, number> = {};
  for (const v of (await metric.get()).values) {
    const name = String((v.labels as Record<string, unknown>)[label] ?? "");
    out[name] = (out[name] ?? 0) + v.value;
  }
  return out;
}

export async function takeSample(metrics: Metrics): Promise<Sample> {
  const lateness = await metrics.timeoutLateness.get();
  let count = 0;
  let sum = 0;
  for (const v of lateness.values) {
    if (v.metricName?.endsWith("_count")) count += v.value;
    else if (v.metricName?.endsWith("_sum")) sum += v.value;
  }
  const rejectedByReason = await byLabel(metrics.eventsRejected, "reason");
  return {
    at: Date.now(),
    accepted: await byLabel(metrics.eventsAccepted, "tenant"),
    duplicate: await byLabel(metrics.eventsDuplicate, "tenant"),
    rejected: Object.values(rejectedByReason).reduce((a, b) => a + b, 0),
    rejectedByReason,
    lateness: { count, sum },
    resolutions: await byLabel(metrics.resolutions, "kind"),
  };
}

const total = (m: Record<string, number>, tenant: string | null) =>
  tenant === null ? Object.values(m).reduce((a, b) => a + b, 0) : (m[tenant] ?? 0);

/** Rates between consecutive samples, for one tenant (host key) or all (admin, `null`). */
export function rates(samples: Sample[], tenant: string | null): RatePoint[] {
  const out: RatePoint[] = [];
  for (let i = 1; i < samples.length; i++) {
    const a = samples[i - 1] as Sample;
    const b = samples[i] as Sample;
    const s = Math.max(0.001, (b.at - a.at) / 1000);
    const fired = b.lateness.count - a.lateness.count;
    out.push({
      at: new Date(b.at).toISOString(),
      accepted: Math.max(0, total(b.accepted, tenant) - total(a.accepted, tenant)) / s,
      duplicate: Math.max(0, total(b.duplicate, tenant) - total(a.duplicate, tenant)) / s,
      rejected: tenant === null ? Math.max(0, b.rejected - a.rejected) / s : null,
      latenessMs: fired > 0 ? ((b.lateness.sum - a.lateness.sum) / fired) * 1000 : null,
    });
  }
  return out;
}

export interface Sampler {
  /** the samples kept, oldest first, plus one taken now */
  read(): Promise<Sample[]>;
  stop(): void;
}

export function startSampler(metrics: Metrics, everyMs = 2000, keep = 60): Sampler {
  const samples: Sample[] = [];
  const tick = async () => {
    samples.push(await takeSample(metrics));
    if (samples.length > keep) samples.shift();
  };
  void tick();
  const timer = setInterval(() => void tick(), everyMs);
  timer.unref();
  return {
    async read() {
      return [...samples, await takeSample(metrics)];
    },
    stop: () => clearInterval(timer),
  };
}
