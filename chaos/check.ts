/**
 * The invariant checker: reads back every wait and event the workload touched (the
 * server's records through the Store, the continuation queue through BullMQ) and
 * compares them with what the workload sent and was told. Each violation carries its
 * evidence: the wait's timeline (server history, the client's observations, the sends
 * of its events) and the faults injected around it.
 */

import type { Resources } from "@rendezvous/engine";
import type { EventRecord, Wait } from "@rendezvous/protocol";
import { Queue } from "bullmq";
import type { FaultRecord } from "./procs.js";
import { type EventLog, TENANT, type WaitLog, type WorkloadLog } from "./workload.js";

export const VIOLATION_CODES = [
  "resolved_twice",
  "state_changed_after_resolution",
  "on_time_event_timed_out",
  "late_event_resolved",
  "accepted_event_unaccounted",
  "event_accepted_twice",
  "wait_lost",
  "wait_overdue",
  "consume_first_twice",
  "continuation_missing",
  "continuation_acted_twice",
  "token_completed_twice",
  "token_completion_lost",
  "heartbeat_lost",
] as const;
export type ViolationCode = (typeof VIOLATION_CODES)[number];

export interface Violation {
  code: ViolationCode;
  waitId?: string;
  event?: string;
  detail: string;
  evidence: unknown;
}

export interface Counts {
  scenarios: number;
  waits: {
    registered: number;
    resolvedByEvent: number;
    timedOut: number;
    cancelled: number;
    waiting: number;
    registerFailed: number;
    expiredByRetention: number;
  };
  events: {
    sent: number;
    sends: number;
    accepted: number;
    acceptedUnanswered: number;
    /** sends that needed a retry because a fault ate an attempt */
    retriedSends: number;
    duplicate: number;
    matched: number;
    buffered: number;
    late: number;
    expired: number;
    neverAccepted: number;
  };
  consume: { grants: number; racedWaits: number };
  continuations: { jobs: number; deliveries: number; redelivered: number; acted: number; failed: number };
  races: { onTime: number; late: number };
  /** token_race: calls through completion tokens, completions and heartbeats answered 200 */
  tokens: { calls: number; completed: number; heartbeats: number; answers: Record<string, number> };
}

export interface CheckResult {
  counts: Counts;
  violations: Violation[];
}

export interface CheckOptions {
  res: Resources;
  log: WorkloadLog;
  faults: FaultRecord[];
  /** a wait still waiting this long past its deadline is a violation */
  boundMs: number;
  /** time of the check (ms) */
  now: number;
  /** retention of the deployment: a record missing after it is expiry, not loss */
  retentionMs: number;
}

const ms = (iso: string | null | undefined) => (iso ? Date.parse(iso) : Number.NaN);

async function continuationJobs(res: Resources): Promise<Map<string, { state: string; data: Wait }>> {
  const queue = new Queue(`continuations.${TENANT}`, {
    connection: res.connect("chaos-check"),
    prefix: res.queuePrefix,
  });
  try {
    const out = new Map<string, { state: string; data: Wait }>();
    for (const state of ["completed", "waiting", "active", "delayed", "failed", "prioritized", "waiting-children"]) {
      // biome-ignore lint/suspicious/noExplicitAny: BullMQ's JobType union
      const jobs = await queue.getJobs([state as any], 0, -1);
      for (const j of jobs) if (j?.id) out.set(j.id, { state, data: j.data as Wait });
    }
    return out;
  } finally {
    await queue.close();
  }
}

export async function check(opts: CheckOptions): Promise<CheckResult> {
  const { res, log } = opts;
  const violations: Violation[] = [];
  const counts: Counts = {
    scenarios: new Set([...log.waits.map((w) => w.scenario), ...log.events.map((e) => e.scenario)]).size,
    waits: {
      registered: 0,
      resolvedByEvent: 0,
      timedOut: 0,
      cancelled: 0,
      waiting: 0,
      registerFailed: 0,
      expiredByRetention: 0,
    },
    events: {
      sent: log.events.length,
      sends: 0,
      accepted: 0,
      acceptedUnanswered: 0,
      retriedSends: 0,
      duplicate: 0,
      matched: 0,
      buffered: 0,
      late: 0,
      expired: 0,
      neverAccepted: 0,
    },
    consume: { grants: 0, racedWaits: 0 },
    continuations: { jobs: 0, deliveries: 0, redelivered: 0, acted: 0, failed: 0 },
    races: { onTime: 0, late: 0 },
    tokens: { calls: 0, completed: 0, heartbeats: 0, answers: {} },
  };
  const expiredByAge = (lastActivity: number) => lastActivity < opts.now - opts.retentionMs + 30_000;

  // ---- events: read every record once
  const records = new Map<EventLog, EventRecord | null>();
  const eventsByCorr = new Map<string, EventLog[]>();
  for (const ev of log.events) {
    records.set(ev, await res.store.getEvent(TENANT, ev.producer, ev.id));
    const list = eventsByCorr.get(ev.correlationId) ?? [];
    list.push(ev);
    eventsByCorr.set(ev.correlationId, list);
  }
  for (const ev of log.events) {
    const rec = records.get(ev) ?? null;
    counts.events.sends += ev.sends.length;
    counts.events.retriedSends += ev.sends.filter((s) => s.failedAttempts > 0).length;
    counts.events.duplicate += ev.sends.filter((s) => s.status === 200).length;
    const answered = ev.sends.filter((s) => s.status === 202 || s.status === 200);
    const streamIds = new Set(answered.map((s) => s.streamId));
    if (streamIds.size > 1) {
      violations.push({
        code: "event_accepted_twice",
        event: `${ev.producer}/${ev.id}`,
        detail: `answers name ${streamIds.size} different stream entries`,
        evidence: { sends: ev.sends, record: rec },
      });
    }
    if (answered.length === 0 && !rec) {
      counts.events.neverAccepted++;
      continue;
    }
    counts.events.accepted++;
    if (answered.length === 0) counts.events.acceptedUnanswered++;
    const lastSend = Math.max(...ev.sends.map((s) => s.at));
    if (!rec) {
      if (expiredByAge(lastSend)) {
        counts.events.expired++;
        continue;
      }
      violations.push({
        code: "accepted_event_unaccounted",
        event: `${ev.producer}/${ev.id}`,
        detail: "accepted (202/200) but no event record",
        evidence: { sends: ev.sends, faults: faultsAround(opts.faults, lastSend - 10_000, lastSend + 10_000) },
      });
      continue;
    }
    if (rec.status === "matched") counts.events.matched++;
    else if (rec.status === "buffered") counts.events.buffered++;
    else if (rec.status === "late") counts.events.late++;
    else if (rec.status === "expired" && expiredByAge(ms(rec.acceptedAt))) counts.events.expired++;
    else {
      violations.push({
        code: "accepted_event_unaccounted",
        event: `${ev.producer}/${ev.id}`,
        detail: `accepted at ${rec.acceptedAt}, status ${rec.status} after quiescence`,
        evidence: {
          record: rec,
          sends: ev.sends,
          faults: faultsAround(opts.faults, ms(rec.acceptedAt) - 10_000, ms(rec.acceptedAt) + 10_000),
        },
      });
    }
  }

  // ---- waits
  const jobs = await continuationJobs(res);
  counts.continuations.jobs = jobs.size;
  const ids = log.waits.filter((w) => w.id).map((w) => w.id);
  const waits = new Map<string, Wait | null>();
  for (let i = 0; i < ids.length; i += 200) {
    const chunk = ids.slice(i, i + 200);
    const got = await res.store.getWaits(chunk);
    chunk.forEach((id, j) => {
      waits.set(id, got[j] ?? null);
    });
  }
  const c = log.continuations;
  for (const n of Object.values(c.deliveries)) {
    counts.continuations.deliveries += n;
    if (n > 1) counts.continuations.redelivered++;
  }
  counts.continuations.failed = Object.keys(c.failed).length;

  for (const w of log.waits) {
    if (!w.id) {
      counts.waits.registerFailed++;
      continue;
    }
    counts.waits.registered++;
    const rec = waits.get(w.id) ?? null;
    const evs = eventsByCorr.get(w.correlationId) ?? [];
    const timeline = () => waitTimeline(w, rec, evs, records, opts.faults);
    if (!rec) {
      const last = Math.max(...w.observations.map((o) => o.at));
      if (expiredByAge(last)) {
        counts.waits.expiredByRetention++;
        continue;
      }
      violations.push({ code: "wait_lost", waitId: w.id, detail: "registered but no record", evidence: timeline() });
      continue;
    }
    if (rec.state === "resolved") counts.waits.resolvedByEvent++;
    else if (rec.state === "timed_out") counts.waits.timedOut++;
    else if (rec.state === "cancelled") counts.waits.cancelled++;
    else counts.waits.waiting++;

    // exactly once: one resolution, state and resolution agree, no change after it
    const resolutions = rec.history.filter((h) => h.what === "resolved");
    if (resolutions.length > 1) {
      violations.push({
        code: "resolved_twice",
        waitId: w.id,
        detail: `${resolutions.length} resolved entries`,
        evidence: timeline(),
      });
    }
    const kindOf: Record<string, string[]> = {
      resolved: ["event", "deliver", "token"],
      timed_out: ["timeout"],
      cancelled: ["cancel"],
      waiting: [],
    };
    if (
      (rec.state === "waiting" && rec.resolution) ||
      (rec.state !== "waiting" && !kindOf[rec.state]?.includes(rec.resolution?.kind ?? ""))
    ) {
      violations.push({
        code: "state_changed_after_resolution",
        waitId: w.id,
        detail: `state ${rec.state} with resolution ${rec.resolution?.kind ?? "none"}`,
        evidence: timeline(),
      });
    }
    // a later read (one sent after a settled state was seen) must show that same state
    const settledSeen = w.observations.filter((o) => o.state !== "waiting").sort((a, b) => a.at - b.at)[0];
    const changed = settledSeen
      ? [
          ...w.observations.filter((o) => (o.start ?? o.at) > settledSeen.at),
          { at: opts.now, state: rec.state, source: "final" },
        ].find((o) => o.state !== settledSeen.state)
      : undefined;
    if (settledSeen && changed) {
      violations.push({
        code: "state_changed_after_resolution",
        waitId: w.id,
        detail: `seen ${settledSeen.state} (${settledSeen.source}), later ${changed.state} (${changed.source})`,
        evidence: timeline(),
      });
    }
    const matchedBy = evs.filter((e) => records.get(e)?.matchedWaits.includes(w.id));
    if (matchedBy.length > 1) {
      violations.push({
        code: "resolved_twice",
        waitId: w.id,
        detail: `${matchedBy.length} events say they resolved it: ${matchedBy.map((e) => e.id).join(", ")}`,
        evidence: timeline(),
      });
    }

    // event time decides the race
    const deadline = ms(rec.deadline);
    const accepted = evs
      .map((e) => ({ e, at: ms(records.get(e)?.acceptedAt ?? e.sends.find((s) => s.acceptedAt)?.acceptedAt) }))
      .filter((x) => !Number.isNaN(x.at));
    if (w.kind === "race") {
      if (accepted.some((x) => x.at <= deadline)) counts.races.onTime++;
      else counts.races.late++;
    }
    if (rec.state === "timed_out") {
      const onTime = accepted.filter((x) => x.at <= deadline);
      if (onTime.length > 0) {
        violations.push({
          code: "on_time_event_timed_out",
          waitId: w.id,
          detail: `deadline ${rec.deadline}; accepted on time: ${onTime.map((x) => `${x.e.id}@${new Date(x.at).toISOString()}`).join(", ")}`,
          evidence: timeline(),
        });
      }
    }
    if (rec.state === "resolved" && rec.resolution?.event && ms(rec.resolution.event.acceptedAt) > deadline) {
      violations.push({
        code: "late_event_resolved",
        waitId: w.id,
        detail: `resolved by ${rec.resolution.event.id} accepted ${rec.resolution.event.acceptedAt} after deadline ${rec.deadline}`,
        evidence: timeline(),
      });
    }
    if (rec.state === "waiting" && !Number.isNaN(deadline) && deadline + opts.boundMs < opts.now) {
      violations.push({
        code: "wait_overdue",
        waitId: w.id,
        detail: `still waiting ${Math.round((opts.now - deadline) / 1000)} s after its deadline ${rec.deadline} (bound ${opts.boundMs / 1000} s)`,
        evidence: timeline(),
      });
    }

    // a completion token completes at most once, and a completion it answered is kept
    if (w.tokenCalls) {
      const completions = w.tokenCalls.filter((x) => x.what !== "heartbeat" && x.status === 200);
      counts.tokens.calls += w.tokenCalls.length;
      for (const x of w.tokenCalls) {
        const key = `${x.what} ${x.status}${x.code ? ` ${x.code}` : ""}`;
        counts.tokens.answers[key] = (counts.tokens.answers[key] ?? 0) + 1;
      }
      counts.tokens.completed += completions.length;
      if (completions.length > 1) {
        violations.push({
          code: "token_completed_twice",
          waitId: w.id,
          detail: `${completions.length} completions through one token answered 200`,
          evidence: timeline(),
        });
      }
      if (completions.length === 1 && rec.resolution?.kind !== "token") {
        violations.push({
          code: "token_completion_lost",
          waitId: w.id,
          detail: `a completion answered 200, the wait is ${rec.state} (${rec.resolution?.kind ?? "no resolution"})`,
          evidence: timeline(),
        });
      }
      const beats = w.tokenCalls.filter((x) => x.what === "heartbeat" && x.status === 200).length;
      counts.tokens.heartbeats += beats;
      if (beats > (rec.heartbeat?.count ?? 0)) {
        violations.push({
          code: "heartbeat_lost",
          waitId: w.id,
          detail: `${beats} heartbeats answered 200, the wait counts ${rec.heartbeat?.count ?? 0}`,
          evidence: timeline(),
        });
      }
    }

    // consume is the once
    // explicit consumers told `first: true`, and continuation workers whose handler ran (it runs
    // for the first claimer, or again for the same worker after a lost answer)
    const grantees = new Set([...w.grants.map((g) => g.by), ...(c.acted[w.id] ?? []).map((a) => a.worker)]);
    counts.consume.grants += grantees.size;
    if (w.grants.some((g) => g.via === "consume")) counts.consume.racedWaits++;
    if (grantees.size > 1 || (rec.consumption && [...grantees].some((g) => g !== rec.consumption?.by))) {
      violations.push({
        code: "consume_first_twice",
        waitId: w.id,
        detail: `first granted to ${[...grantees].join(", ")}; recorded consumer ${rec.consumption?.by ?? "none"}`,
        evidence: timeline(),
      });
    }

    // continuations: one per settled wait, acted on once
    if (rec.state !== "waiting") {
      if (!jobs.has(w.id)) {
        violations.push({
          code: "continuation_missing",
          waitId: w.id,
          detail: `settled (${rec.state}) but no job ${w.id} in continuations.${TENANT}`,
          evidence: timeline(),
        });
      }
    }
    const acted = (c.acted[w.id] ?? []).length + w.grants.filter((g) => g.via === "consume").length;
    counts.continuations.acted += (c.acted[w.id] ?? []).length;
    if (acted > 1) {
      violations.push({
        code: "continuation_acted_twice",
        waitId: w.id,
        detail: `acted on ${acted} times: ${JSON.stringify({ handler: c.acted[w.id] ?? [], consumers: w.grants.filter((g) => g.via === "consume") })}; job delivered ${c.deliveries[w.id] ?? 0} times`,
        evidence: timeline(),
      });
    }
  }
  return { counts, violations };
}

function faultsAround(faults: FaultRecord[], from: number, to: number) {
  return faults.filter((f) => f.at >= from && f.at <= to).map((f) => ({ ...f, at: new Date(f.at).toISOString() }));
}

/** Everything known about one wait, in time order: the evidence printed with a violation. */
export function waitTimeline(
  w: WaitLog,
  rec: Wait | null,
  evs: EventLog[],
  records: Map<EventLog, EventRecord | null>,
  faults: FaultRecord[],
) {
  const lines: Array<{ at: number; line: string }> = [];
  const iso = (t: number) => new Date(t).toISOString();
  for (const h of rec?.history ?? []) {
    const { at, what, ...rest } = h;
    lines.push({ at: ms(at), line: `server  ${what} ${JSON.stringify(rest)}` });
  }
  for (const o of w.observations) lines.push({ at: o.at, line: `client  saw ${o.state} (${o.source})` });
  for (const g of w.grants) lines.push({ at: g.at, line: `client  first granted to ${g.by} via ${g.via}` });
  for (const e of evs) {
    for (const s of e.sends) {
      lines.push({
        at: s.at,
        line: `client  sent ${e.producer}/${e.id}${s.redelivery ? " (redelivery)" : ""} → ${s.status} after ${s.attempts} attempt(s)${s.acceptedAt ? ` acceptedAt ${s.acceptedAt}` : ""}`,
      });
    }
    const r = records.get(e);
    if (r) lines.push({ at: ms(r.acceptedAt), line: `server  event ${e.producer}/${e.id} accepted, now ${r.status}` });
  }
  const times = lines.map((l) => l.at).filter((t) => !Number.isNaN(t));
  const from = Math.min(...times) - 5000;
  const to = Math.max(...times) + 5000;
  for (const f of faults) {
    if (f.at >= from && f.at <= to)
      lines.push({ at: f.at, line: `fault   ${f.what} ${f.target}${f.pid ? ` pid ${f.pid}` : ""}` });
  }
  lines.sort((a, b) => a.at - b.at);
  return {
    wait: {
      id: w.id,
      kind: w.kind,
      correlationId: w.correlationId,
      timeoutMs: w.timeoutMs,
      createdAt: rec?.createdAt ?? w.createdAt,
      deadline: rec?.deadline ?? w.deadline,
      state: rec?.state ?? "(missing)",
      resolution: rec?.resolution ?? null,
      consumption: rec?.consumption ?? null,
      cancelStatus: w.cancelStatus,
    },
    timeline: lines.map((l) => `${Number.isNaN(l.at) ? "?" : iso(l.at)}  ${l.line}`),
  };
}
