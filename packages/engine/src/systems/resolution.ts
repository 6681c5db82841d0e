/**
 * Resolution by the workers: the match of stream entries (matcher), timeouts by the
 * event-time rule (scheduler), and the removal of what has outlived its time (sweeper).
 */

import { decodeParts } from "../encoding.js";
import type { EngineContext } from "../engine-context.js";
import { tagPartition, waitIdPrefix } from "../formats/index-members.js";
import type { StreamEntry } from "../formats/stream-entries.js";
import type { CountDelta } from "../quotas.js";
import { expireRecordsCall, expireRecordsResult } from "../transitions/expireRecords.js";
import { forgetRunPositionsCall } from "../transitions/forgetRunPositions.js";
import {
  type Handoff,
  handedOf,
  type MatchResult,
  matchEventCall,
  matchEventResult,
  settledCount,
} from "../transitions/matchEvent.js";
import { type PromoteResult, promoteDeadlinesCall, promoteDeadlinesResult } from "../transitions/promoteDeadlines.js";
import type { Reply } from "../transitions/replies.js";
import { type TimeoutResult, timeoutWaitCall, timeoutWaitResults } from "../transitions/timeoutWait.js";

/** Most waits one timeoutWait call takes (timeoutMany sends more as several calls: a script's unpack takes some 8,000 values). */
const TIMEOUT_CALL_WAITS = 500;

export class ResolutionSystem {
  constructor(private readonly ctx: EngineContext) {}

  /**
   * Runs the match for stream entries of one partition, in one round trip; `traces[i]`,
   * the trace context text of entry i's match, goes on the outbox entries it writes;
   * with `handoff`, a match that settled a wait delivers the outbox's new entries to the
   * consumer `to`, and `take` gets them as soon as the match answers (before the quota
   * counts are noted; also each result's `handed`).
   */
  async match(
    partition: number,
    entries: Array<{ streamId: string; eventKey: string }>,
    traces?: ReadonlyArray<string | undefined>,
    handoff?: { to: Handoff; take: (entries: StreamEntry[]) => void },
  ): Promise<MatchResult[]> {
    const { keys, config } = this.ctx;
    const k = keys.partition(partition);
    const now = this.ctx.now();
    const replies = await this.ctx.runAllSettled(
      entries.map((e, i) =>
        matchEventCall(k, {
          trace: traces?.[i],
          streamId: e.streamId,
          eventKey: e.eventKey,
          fanoutCap: config.fanoutCap,
          retentionMs: config.retentionMs,
          now,
          idPrefix: waitIdPrefix(partition),
          handoff: handoff?.to,
        }),
      ),
    );
    // entries a match handed over are this dispatcher's pending entries already: taken
    // even when another match of the batch failed, or they would wait for a claim
    if (handoff) {
      const handed = replies.flatMap((r) => (r instanceof Error ? [] : (handedOf(r) ?? [])));
      if (handed.length > 0) handoff.take(handed);
    }
    const failed = replies.find((r): r is Error => r instanceof Error);
    if (failed) throw failed;
    const results = (replies as Reply[]).map(matchEventResult);
    const deltas = matchDeltas(
      entries.map((e) => e.eventKey),
      results,
    );
    await this.ctx.noteCounts(deltas);
    return results;
  }

  /** Tries to time out a wait by the event-time rule. */
  async timeout(waitId: string): Promise<TimeoutResult> {
    const [result] = await this.timeoutMany([waitId]);
    return result as TimeoutResult;
  }

  /** Tries to time out several waits, in one round trip: one call per partition. */
  async timeoutMany(waitIds: string[]): Promise<TimeoutResult[]> {
    const { keys, config } = this.ctx;
    const now = this.ctx.now();
    const partitions = waitIds.map((id) => keys.waitPartition(id));
    const idsOf = (members: number[]) => members.map((i) => waitIds[i] as string);
    const outcomes = await this.ctx.perPartition<TimeoutResult>(
      waitIds.flatMap((_, i) => (partitions[i] === null ? [] : [i])),
      (i) => keys.partition(partitions[i] as number),
      (k, members) => timeoutWaitCall(k, { waitIds: idsOf(members), retentionMs: config.retentionMs, now }),
      (reply, _count, members) => timeoutWaitResults(idsOf(members), reply),
      TIMEOUT_CALL_WAITS,
    );
    const results = waitIds.map((_, i): TimeoutResult => outcomes[i] ?? { outcome: "not_found" });
    const deltas = new Map<string, CountDelta>();
    for (const r of results) {
      if (r.outcome !== "timed_out") continue;
      deltas.set(r.wait.tenant, { waiting: (deltas.get(r.wait.tenant)?.waiting ?? 0) - 1 });
    }
    await this.ctx.noteCounts(deltas);
    return results;
  }

  /**
   * Moves the parked deadlines of these partitions whose slot starts within `reachMs`
   * into the deadline index (lua/includes/parked-deadlines.lua): one pipelined call per
   * partition, repeated for the partitions with more, at most `rounds` times.
   */
  async promoteMany(partitions: readonly number[], reachMs: number, rounds = 20): Promise<PromoteResult> {
    const { keys } = this.ctx;
    const total: PromoteResult = { promoted: 0, dropped: 0, more: false };
    let open = [...partitions];
    for (let round = 0; round < rounds && open.length > 0; round++) {
      const now = this.ctx.now();
      const replies = await this.ctx.runAll(open.map((p) => promoteDeadlinesCall(keys.partition(p), { reachMs, now })));
      const results = replies.map(promoteDeadlinesResult);
      for (const r of results) {
        total.promoted += r.promoted;
        total.dropped += r.dropped;
      }
      open = open.filter((_, i) => results[i]?.more);
    }
    total.more = open.length > 0;
    return total;
  }

  /** Removes expired records of one partition (bounded work per call). */
  async expire(partition: number, limit = 200): Promise<{ handled: number; more: boolean }> {
    const [result] = await this.expireMany([partition], limit);
    return result as { handled: number; more: boolean };
  }

  /**
   * Removes expired records of several partitions, one pipelined round trip; then, when
   * settled waits were removed, their run-index entries (in their runs' partitions, a
   * second round trip). Between the two a re-registration of the very same run position
   * could claim it anew and lose that claim: it then registers like a first time.
   */
  async expireMany(partitions: number[], limit = 200): Promise<Array<{ handled: number; more: boolean }>> {
    const { keys } = this.ctx;
    const now = this.ctx.now();
    const replies = await this.ctx.runAll(partitions.map((p) => expireRecordsCall(keys.partition(p), { limit, now })));
    const results = replies.map(expireRecordsResult);
    const deltas = new Map<string, CountDelta>();
    for (const { bufferedTenants } of results) {
      for (const tenant of bufferedTenants) {
        deltas.set(tenant, { buffered: (deltas.get(tenant)?.buffered ?? 0) - 1 });
      }
    }
    await this.ctx.noteCounts(deltas);
    const byRunPartition = new Map<number, Array<{ runPosition: string; tag: string }>>();
    for (const { waits } of results) {
      for (const w of waits) {
        const waitPartition = keys.waitPartition(w.waitId);
        if (waitPartition === null) continue;
        const rp = keys.runPartition(w.tenant, w.runId);
        const list = byRunPartition.get(rp) ?? [];
        list.push({ runPosition: keys.runPosition(w.tenant, w.runId, w.position), tag: tagPartition(waitPartition) });
        byRunPartition.set(rp, list);
      }
    }
    if (byRunPartition.size > 0) {
      await this.ctx.runAll(
        [...byRunPartition].map(([rp, entries]) => forgetRunPositionsCall(keys.partition(rp), { entries })),
      );
    }
    return results.map(({ handled, more }) => ({ handled, more }));
  }
}

/**
 * The tenants' count changes of matches (event key i's result i): the waits a match
 * settled leave `waiting` (not those that only collected the event), an event it
 * buffered is buffered.
 */
export function matchDeltas(eventKeys: readonly string[], results: readonly MatchResult[]): Map<string, CountDelta> {
  const deltas = new Map<string, CountDelta>();
  results.forEach((r, i) => {
    if (r.status !== "matched" && r.status !== "buffered" && r.status !== "late") return;
    const [tenant = ""] = decodeParts(eventKeys[i] ?? "", 1);
    const d = deltas.get(tenant) ?? {};
    const settled = settledCount(r);
    if (settled > 0) d.waiting = (d.waiting ?? 0) - settled;
    if (r.status !== "matched") d.buffered = (d.buffered ?? 0) + 1;
    deltas.set(tenant, d);
  });
  return deltas;
}
