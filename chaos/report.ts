/**
 * The chaos report: one JSON document (`chaos/results/<time>.json`, format in
 * docs/chaos.md) and its human text, printed at the end of a run.
 */
import type { Counts, Violation } from "./check.js";
import { VIOLATION_CODES } from "./check.js";
import type { FaultRecord } from "./procs.js";
import type { SoakSummary } from "./soak.js";

export interface ChaosReport {
  format: "rendezvous-chaos/1";
  mode: "chaos" | "soak";
  seed: number;
  startedAt: string;
  durationMs: number;
  settings: Record<string, unknown>;
  faults: { roleKills: Record<string, number>; redisRestarts: number; log: Array<FaultRecord & { iso: string }> };
  counts: Counts;
  /** every violation code with its count (all must be 0) */
  violationCounts: Record<string, number>;
  violations: Violation[];
  soak?: SoakSummary;
  ok: boolean;
}

export function buildReport(input: {
  mode: "chaos" | "soak";
  seed: number;
  startedAt: number;
  durationMs: number;
  settings: Record<string, unknown>;
  faults: FaultRecord[];
  counts: Counts;
  violations: Violation[];
  soak?: SoakSummary;
}): ChaosReport {
  const roleKills: Record<string, number> = {};
  for (const f of input.faults) if (f.what === "kill") roleKills[f.target] = (roleKills[f.target] ?? 0) + 1;
  const violationCounts = Object.fromEntries(VIOLATION_CODES.map((c) => [c, 0])) as Record<string, number>;
  for (const v of input.violations) violationCounts[v.code] = (violationCounts[v.code] ?? 0) + 1;
  return {
    format: "rendezvous-chaos/1",
    mode: input.mode,
    seed: input.seed,
    startedAt: new Date(input.startedAt).toISOString(),
    durationMs: input.durationMs,
    settings: input.settings,
    faults: {
      roleKills,
      redisRestarts: input.faults.filter((f) => f.what === "redis_restart").length,
      log: input.faults.map((f) => ({ ...f, iso: new Date(f.at).toISOString() })),
    },
    counts: input.counts,
    violationCounts,
    violations: input.violations,
    soak: input.soak,
    ok: input.violations.length === 0 && (input.soak?.ok ?? true),
  };
}

const row = (label: string, value: unknown) => `  ${label.padEnd(34)} ${value}`;

export function formatReport(r: ChaosReport, maxEvidence = 5): string {
  const c = r.counts;
  const out: string[] = [];
  out.push(`rendezvous ${r.mode} report — seed ${r.seed}, ${Math.round(r.durationMs / 1000)} s from ${r.startedAt}`);
  out.push("");
  out.push("faults");
  out.push(
    row(
      "role SIGKILLs",
      Object.entries(r.faults.roleKills)
        .map(([k, v]) => `${k} ${v}`)
        .join(", ") || "0",
    ),
  );
  out.push(row("redis restarts (from AOF)", r.faults.redisRestarts));
  const own = (r.settings.unexpectedExits as unknown[] | undefined) ?? [];
  out.push(row("roles that died on their own", own.length ? JSON.stringify(own) : 0));
  out.push("");
  out.push("waits");
  out.push(row("registered", c.waits.registered));
  out.push(row("resolved by event", c.waits.resolvedByEvent));
  out.push(row("timed out", c.waits.timedOut));
  out.push(row("cancelled", c.waits.cancelled));
  out.push(row("still waiting (deadline ahead)", c.waits.waiting));
  if (c.waits.expiredByRetention) out.push(row("removed by retention", c.waits.expiredByRetention));
  out.push(row("registration never answered", c.waits.registerFailed));
  out.push(row("deadline races on time / late", `${c.races.onTime} / ${c.races.late}`));
  if (c.shapes) {
    out.push(row("any-of won by success / failure", `${c.shapes.anyOfSuccess} / ${c.shapes.anyOfFailure}`));
    out.push(row("count 3 resolved / timed out", `${c.shapes.countResolved} / ${c.shapes.countTimedOut}`));
  }
  out.push("");
  out.push("events");
  out.push(row("sent (distinct ids) / sends", `${c.events.sent} / ${c.events.sends}`));
  out.push(row("accepted", `${c.events.accepted} (${c.events.acceptedUnanswered} with the answer lost)`));
  out.push(row("sends retried after a fault", c.events.retriedSends));
  out.push(row("duplicate answers (200)", c.events.duplicate));
  out.push(row("matched", c.events.matched));
  out.push(row("buffered", c.events.buffered));
  out.push(row("late", c.events.late));
  if (c.events.expired) out.push(row("expired by retention", c.events.expired));
  out.push(row("never accepted", c.events.neverAccepted));
  out.push("");
  out.push("continuations");
  out.push(row("jobs in continuations.<tenant>", c.continuations.jobs));
  out.push(row("deliveries (redelivered jobs)", `${c.continuations.deliveries} (${c.continuations.redelivered})`));
  out.push(row("acted on by a worker", c.continuations.acted));
  out.push(row("consume: first grants / raced waits", `${c.consume.grants} / ${c.consume.racedWaits}`));
  out.push("");
  out.push("violations (each must be 0)");
  for (const [code, n] of Object.entries(r.violationCounts)) out.push(row(code, n));
  if (r.soak) {
    out.push("");
    out.push(r.soak.table);
    for (const line of r.soak.judgement) out.push(`  ${line}`);
  }
  if (r.violations.length > 0) {
    out.push("");
    out.push(`evidence (first ${Math.min(maxEvidence, r.violations.length)} of ${r.violations.length})`);
    for (const v of r.violations.slice(0, maxEvidence)) {
      out.push(`- ${v.code} ${v.waitId ?? v.event ?? ""}: ${v.detail}`);
      const ev = v.evidence as { timeline?: string[] } | undefined;
      if (ev?.timeline) for (const l of ev.timeline) out.push(`    ${l}`);
      else out.push(`    ${JSON.stringify(v.evidence)}`);
    }
  }
  out.push("");
  const grows = r.soak?.judgement.filter((l) => l.startsWith("GROWS")) ?? [];
  if (r.ok) out.push(r.soak ? "OK: no violations, no growth after the warm-up" : "OK: no violations");
  else
    out.push(
      `FAILED: ${r.violations.length} violation(s)${grows.length ? `; growth after the warm-up: ${grows.length}` : ""}`,
    );
  return out.join("\n");
}
