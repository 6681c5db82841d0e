/**
 * The console's live numbers: a sampler that reads this process's counters (events
 * accepted / duplicate / rejected, timeout lateness and settled waits, the last two
 * per tenant so a host key sees its own tenant's) every `everyMs` and keeps the
 * last `keep` samples, so the overview can draw rates and lateness over the last
 * minutes. The counters are the ones /metrics exposes; with several api processes
 * each console shows its own process's traffic (Prometheus sums them all).
 */
import type { Metrics } from "@rendezvous/engine";
import type { z } from "zod";
import type { HttpFiguresSchema } from "./console-figures.js";
import { REQUESTS } from "./http-metrics.js";

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
  /** timeouts fired so far and the sum of their lateness (s), by tenant */
  lateness: Record<string, Lateness>;
  /** waits settled so far, by tenant, then by kind */
  resolutions: Record<string, Record<string, number>>;
  /** HTTP requests answered so far (every route), and those answered 4xx and 5xx */
  http: HttpCounts;
}

export interface HttpCounts {
  requests: number;
  clientErrors: number;
  serverErrors: number;
}

export interface Lateness {
  count: number;
  sum: number;
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

const tenantOf = (labels: object) => String((labels as Record<string, unknown>).tenant ?? "");

/** The request counter's totals by status class (zeros before the app has registered it). */
async function httpCounts(metrics: Metrics): Promise<HttpCounts> {
  const out: HttpCounts = { requests: 0, clientErrors: 0, serverErrors: 0 };
  const counter = metrics.registry.getSingleMetric(REQUESTS);
  if (!counter) return out;
  for (const v of (await counter.get()).values) {
    const status = String((v.labels as Record<string, unknown>).status ?? "");
    out.requests += v.value;
    if (status.startsWith("4")) out.clientErrors += v.value;
    else if (status.startsWith("5")) out.serverErrors += v.value;
  }
  return out;
}

export async function takeSample(metrics: Metrics): Promise<Sample> {
  const lateness: Record<string, Lateness> = {};
  for (const v of (await metrics.timeoutLateness.get()).values) {
    const isCount = v.metricName?.endsWith("_count");
    if (!isCount && !v.metricName?.endsWith("_sum")) continue;
    const tenant = tenantOf(v.labels);
    const l = lateness[tenant] ?? { count: 0, sum: 0 };
    lateness[tenant] = l;
    if (isCount) l.count += v.value;
    else l.sum += v.value;
  }
  const resolutions: Record<string, Record<string, number>> = {};
  for (const v of (await metrics.resolutions.get()).values) {
    const tenant = tenantOf(v.labels);
    const kinds = resolutions[tenant] ?? {};
    resolutions[tenant] = kinds;
    const kind = String((v.labels as Record<string, unknown>).kind ?? "");
    kinds[kind] = (kinds[kind] ?? 0) + v.value;
  }
  const rejectedByReason = await byLabel(metrics.eventsRejected, "reason");
  return {
    at: Date.now(),
    accepted: await byLabel(metrics.eventsAccepted, "tenant"),
    duplicate: await byLabel(metrics.eventsDuplicate, "tenant"),
    rejected: Object.values(rejectedByReason).reduce((a, b) => a + b, 0),
    rejectedByReason,
    lateness,
    resolutions,
    http: await httpCounts(metrics),
  };
}

const total = (m: Record<string, number>, tenant: string | null) =>
  tenant === null ? Object.values(m).reduce((a, b) => a + b, 0) : (m[tenant] ?? 0);

/** Timeouts fired and their summed lateness, of one tenant or (null) all. */
export function latenessOf(sample: Sample | undefined, tenant: string | null): Lateness {
  if (!sample) return { count: 0, sum: 0 };
  if (tenant !== null) return sample.lateness[tenant] ?? { count: 0, sum: 0 };
  const out = { count: 0, sum: 0 };
  for (const l of Object.values(sample.lateness)) {
    out.count += l.count;
    out.sum += l.sum;
  }
  return out;
}

/** Waits settled by kind, of one tenant or (null) all. */
export function resolutionsOf(sample: Sample | undefined, tenant: string | null): Record<string, number> {
  if (!sample) return {};
  if (tenant !== null) return { ...sample.resolutions[tenant] };
  const out: Record<string, number> = {};
  for (const kinds of Object.values(sample.resolutions)) {
    for (const [kind, n] of Object.entries(kinds)) out[kind] = (out[kind] ?? 0) + n;
  }
  return out;
}

/** Rates between consecutive samples, for one tenant (host key) or all (admin, `null`). */
export function rates(samples: Sample[], tenant: string | null): RatePoint[] {
  const out: RatePoint[] = [];
  for (let i = 1; i < samples.length; i++) {
    const a = samples[i - 1] as Sample;
    const b = samples[i] as Sample;
    const s = Math.max(0.001, (b.at - a.at) / 1000);
    const la = latenessOf(a, tenant);
    const lb = latenessOf(b, tenant);
    const fired = lb.count - la.count;
    out.push({
      at: new Date(b.at).toISOString(),
      accepted: Math.max(0, total(b.accepted, tenant) - total(a.accepted, tenant)) / s,
      duplicate: Math.max(0, total(b.duplicate, tenant) - total(a.duplicate, tenant)) / s,
      rejected: tenant === null ? Math.max(0, b.rejected - a.rejected) / s : null,
      latenessMs: fired > 0 ? ((lb.sum - la.sum) / fired) * 1000 : null,
    });
  }
  return out;
}

/**
 * The HTTP request rates of the overview (docs/console.md): per interval, over the window, since
 * start; the shares are 0–1, null when no request was answered in the window. Its schema is the
 * overview answer's (console-figures.ts).
 */
export type HttpFigures = NonNullable<z.infer<typeof HttpFiguresSchema>>;

const delta = (a: HttpCounts, b: HttpCounts): HttpCounts => ({
  requests: Math.max(0, b.requests - a.requests),
  clientErrors: Math.max(0, b.clientErrors - a.clientErrors),
  serverErrors: Math.max(0, b.serverErrors - a.serverErrors),
});

export function httpFigures(samples: Sample[]): HttpFigures {
  const series: HttpFigures["series"] = [];
  for (let i = 1; i < samples.length; i++) {
    const a = samples[i - 1] as Sample;
    const b = samples[i] as Sample;
    const s = Math.max(0.001, (b.at - a.at) / 1000);
    const d = delta(a.http, b.http);
    series.push({
      at: new Date(b.at).toISOString(),
      requests: d.requests / s,
      clientErrors: d.clientErrors / s,
      serverErrors: d.serverErrors / s,
    });
  }
  const first = samples[0];
  const last = samples[samples.length - 1];
  const totals = last?.http ?? { requests: 0, clientErrors: 0, serverErrors: 0 };
  const seconds = first && last ? Math.max(0.001, (last.at - first.at) / 1000) : 0.001;
  const d = first && last ? delta(first.http, last.http) : totals;
  return {
    series,
    recent: {
      seconds,
      requestsPerSec: d.requests / seconds,
      clientErrorsPerSec: d.clientErrors / seconds,
      serverErrorsPerSec: d.serverErrors / seconds,
      clientErrorShare: d.requests > 0 ? d.clientErrors / d.requests : null,
      serverErrorShare: d.requests > 0 ? d.serverErrors / d.requests : null,
    },
    totals,
  };
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
