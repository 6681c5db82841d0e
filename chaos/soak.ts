/**
 * Soak sampling: the RSS of every process (from /proc/<pid>/status) and Redis's
 * memory (INFO memory) and contents (entries per kind of key) every `everyMs`; at the
 * end a table and a judgement: after the warm-up (the longest retention plus a sweep),
 * nothing may keep growing except what is kept longer than the run by design (completed
 * continuation jobs, kept 24 h): those are judged per job instead — the bytes of the
 * continuation queue's keys (but its events stream, which BullMQ caps per queue) over its
 * completed jobs (each a resolved wait whose continuation the host consumed), at most
 * CONTINUATION_BYTES_PER_WAIT at the end, once the scheduler has compacted them.
 */
import { readFileSync } from "node:fs";
import type { Redis } from "ioredis";

export interface Sample {
  /** seconds since the start */
  t: number;
  rssMb: Record<string, number>;
  /**
   * used_memory, RSS, and `MEMORY USAGE` summed over the continuation queue's keys and over
   * every other key (the data rendezvous keeps for its retention windows)
   */
  redis: {
    usedMb: number;
    rssMb: number;
    continuationMb: number;
    dataMb: number;
    keys: number;
    /** MEMORY USAGE of the continuation queues' keys but their events streams (capped by BullMQ, per queue) */
    continuationJobBytes: number;
    /** MEMORY USAGE of the continuation queues' events streams */
    continuationEventsBytes: number;
    /** completed continuation jobs: resolved waits whose continuation a host consumed */
    completedJobs: number;
  };
  /** entries per kind of key (hash fields, zset/stream/list members, 1 per string) */
  entries: Record<string, number>;
}

export interface SoakSummary {
  samples: Sample[];
  warmupS: number;
  table: string;
  judgement: string[];
  ok: boolean;
}

export function rssMb(pid: number | undefined): number {
  if (!pid) return Number.NaN;
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
    return m ? Math.round(Number(m[1]) / 102.4) / 10 : Number.NaN;
  } catch {
    return Number.NaN;
  }
}

/** `{rdv:p3}:w` → `p:w`; `rdv:continuations.acme:123` → `q:continuations.acme:job`. */
function kindOf(key: string, prefix: string): string {
  const part = /^\{[^}]*:p\d+\}:([^:]+)/.exec(key);
  if (part) return `p:${part[1]}`;
  if (key.startsWith(`{${prefix}:meta}`)) return "meta";
  if (key.startsWith(`${prefix}:`)) {
    const [queue, suffix] = key.slice(prefix.length + 1).split(":");
    const s = suffix === undefined ? "" : /^[A-Za-z]+$/.test(suffix) ? suffix : "job";
    return `q:${queue}:${s}`;
  }
  return "other";
}

const LONG_KEPT = /^q:continuations\./; // completed continuation jobs are kept 24 h (docs/api.md)
/**
 * The parked deadline slots (`:dp` and its `:dp:<slot start>` strings, lua/includes/
 * parked-deadlines.lua): a slot lives until the sweep promotes it, a minute before it starts,
 * so their number grows until the run is as long as the workload's farthest parked deadline
 * (the far_deadline scenario's, an hour), then holds. Judged against that bound.
 */
const PARKED = "p:dp";
const SLOT_MS = 60_000;
/** a continuation queue's events stream: BullMQ caps it (~10,000 entries per queue), not per wait */
const EVENTS_STREAM = /^q:continuations\.[^:]*:events$/;
const COMPLETED_SET = /^q:continuations\.[^:]*:completed$/;
/** the issue's bound (#21): Redis bytes held by continuations per resolved and consumed wait */
export const CONTINUATION_BYTES_PER_WAIT = 400;

const SIZE: Record<string, string> = { hash: "hlen", zset: "zcard", stream: "xlen", list: "llen", set: "scard" };

export async function sampleRedis(
  redis: Redis,
  prefix: string,
): Promise<Sample["redis"] & { entries: Record<string, number> }> {
  const info = await redis.info("memory");
  const num = (name: string) => Number(new RegExp(`${name}:(\\d+)`).exec(info)?.[1] ?? Number.NaN);
  const keys: string[] = [];
  let cursor = "0";
  do {
    const [next, batch] = await redis.scan(cursor, "COUNT", 1000);
    cursor = next;
    keys.push(...batch);
  } while (cursor !== "0");
  const entries: Record<string, number> = {};
  let continuationBytes = 0;
  let eventsBytes = 0;
  let dataBytes = 0;
  for (let i = 0; i < keys.length; i += 500) {
    const chunk = keys.slice(i, i + 500);
    const types = (await redis.pipeline(chunk.map((k) => ["type", k])).exec()) ?? [];
    const sizes =
      (await redis
        .pipeline(
          chunk.flatMap((k, j) => {
            const t = String(types[j]?.[1]);
            const cmd = SIZE[t];
            return [cmd ? [cmd, k] : ["exists", k], ["memory", "usage", k, "samples", "0"]];
          }),
        )
        .exec()) ?? [];
    let s = 0;
    for (const k of chunk) {
      const kind = kindOf(k, prefix);
      entries[kind] = (entries[kind] ?? 0) + Number(sizes[s++]?.[1] ?? 0);
      const bytes = Number(sizes[s++]?.[1] ?? 0);
      if (EVENTS_STREAM.test(kind)) eventsBytes += bytes;
      else if (LONG_KEPT.test(kind)) continuationBytes += bytes;
      else dataBytes += bytes;
    }
  }
  const mb = (b: number) => Math.round(b / 104857.6) / 10;
  return {
    usedMb: mb(num("used_memory")),
    rssMb: mb(num("used_memory_rss")),
    continuationMb: mb(continuationBytes + eventsBytes),
    dataMb: mb(dataBytes),
    keys: keys.length,
    continuationJobBytes: continuationBytes,
    continuationEventsBytes: eventsBytes,
    completedJobs: Object.entries(entries).reduce((n, [k, v]) => (COMPLETED_SET.test(k) ? n + v : n), 0),
    entries,
  };
}

/** The sample key of the harness's own process (shown in the table, not judged). */
export const DRIVER = "workload";

/** Bytes of the continuation queues (but their events streams) per completed job, rounded. */
function perWait(s: Sample): number {
  return s.redis.completedJobs > 0 ? Math.round(s.redis.continuationJobBytes / s.redis.completedJobs) : Number.NaN;
}

/**
 * The table (one row per sample) and the growth judgement after warm-up; `parked`: the
 * partitions and the farthest deadline the workload parks (the bound of the parked slots).
 */
export function summarize(
  samples: Sample[],
  warmupS: number,
  parked: { partitions: number; farthestMs: number },
): SoakSummary {
  const procs = [...new Set(samples.flatMap((s) => Object.keys(s.rssMb)))];
  const kinds = [...new Set(samples.flatMap((s) => Object.keys(s.entries)))].sort();
  const shownKinds = kinds.filter((k) => samples.some((s) => (s.entries[k] ?? 0) > 10));
  const header = [
    "t (s)",
    ...procs.map((p) => `${p} MB`),
    "redis used MB",
    "cont. jobs MB",
    "cont. B/wait",
    "data MB",
    ...shownKinds,
  ];
  const rows = samples.map((s) => [
    String(s.t),
    ...procs.map((p) => String(s.rssMb[p] ?? "")),
    String(s.redis.usedMb),
    String(s.redis.continuationMb),
    String(perWait(s)),
    String(s.redis.dataMb),
    ...shownKinds.map((k) => String(s.entries[k] ?? 0)),
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]?.length ?? 0)));
  const line = (cells: string[]) => `| ${cells.map((c, i) => c.padStart(widths[i] ?? 0)).join(" | ")} |`;
  const table = [line(header), `|${widths.map((w) => `${"-".repeat(w + 1)}:`).join("|")}|`, ...rows.map(line)].join(
    "\n",
  );

  const judgement: string[] = [];
  let ok = true;
  const after = samples.filter((s) => s.t >= warmupS);
  if (after.length < 4) {
    judgement.push(`too few samples after the ${warmupS} s warm-up to judge growth`);
    return { samples, warmupS, table, judgement, ok: false };
  }
  const half = Math.floor(after.length / 2);
  const early = after.slice(0, half);
  const late = after.slice(half);
  const maxOf = (xs: Sample[], f: (s: Sample) => number) => Math.max(...xs.map(f).filter((x) => !Number.isNaN(x)));
  const judge = (label: string, f: (s: Sample) => number, slack: number, ratio: number) => {
    const a = maxOf(early, f);
    const b = maxOf(late, f);
    const grew = b > a * ratio + slack;
    if (grew) ok = false;
    judgement.push(`${grew ? "GROWS" : "flat "} ${label}: max ${a} → ${b} (allowed ${Math.round(a * ratio + slack)})`);
  };
  for (const p of procs) {
    if (p === DRIVER) continue;
    judge(`${p} RSS MB`, (s) => s.rssMb[p] ?? Number.NaN, 30, 1.25);
  }
  if (procs.includes(DRIVER)) {
    const last = samples.at(-1)?.rssMb[DRIVER];
    judgement.push(
      `not judged: ${DRIVER} RSS (${last} MB at the end) — the harness itself, which keeps every scenario's log for the final check; the soak judges the product`,
    );
  }
  judge("redis data MB (every key but the continuation queue)", (s) => s.redis.dataMb, 0.5, 1.25);
  for (const k of shownKinds) {
    if (LONG_KEPT.test(k) || k === PARKED) continue;
    judge(`entries ${k}`, (s) => s.entries[k] ?? 0, 50, 1.25);
  }
  // each slot is a :dp member and a string: two entries
  const slotsBound = 2 * parked.partitions * (Math.ceil(parked.farthestMs / SLOT_MS) + 1);
  const slotsMax = Math.max(0, ...samples.map((s) => s.entries[PARKED] ?? 0));
  if (slotsMax > slotsBound) ok = false;
  judgement.push(
    `${slotsMax > slotsBound ? "OVER " : "ok   "} entries ${PARKED} (parked deadline slots, kept until a minute before they start: grow for as long as the farthest parked deadline, ${parked.farthestMs / 60_000} min, then hold): max ${slotsMax} (bound ${slotsBound})`,
  );
  const cont = shownKinds.filter((k) => LONG_KEPT.test(k));
  if (cont.length > 0) {
    judgement.push(
      `not judged for growth: ${cont.join(", ")} — completed continuation jobs are kept 24 h by design (grow with the run; ${samples.at(-1)?.redis.continuationMb} MB at the end), judged per wait below`,
    );
  }
  const last = samples.at(-1);
  if (last) {
    const bytes = perWait(last);
    const over = !(bytes <= CONTINUATION_BYTES_PER_WAIT);
    if (over) ok = false;
    judgement.push(
      `${over ? "OVER " : "ok   "} continuation bytes per resolved and consumed wait at the end: ${bytes} (${last.redis.continuationJobBytes} B over ${last.redis.completedJobs} completed jobs; allowed ${CONTINUATION_BYTES_PER_WAIT}); events streams apart (capped by BullMQ per queue): ${Math.round(last.redis.continuationEventsBytes / 1024)} KB`,
    );
  }
  return { samples, warmupS, table, judgement, ok };
}
