/**
 * Ingest: dedup and append of a producer's events, the `duplicate_ignored` notes on the
 * waits a re-sent event reached, and reading an accepted event back (the refusals
 * remembered for `explain`: rejections.ts).
 */

import { type EventInput, type EventRecord, RendezvousError } from "@rendezvous/protocol";
import { type Config, retentionFor } from "../config.js";
import { canonicalJson, digest } from "../encoding.js";
import type { EngineContext } from "../engine-context.js";
import { failpoint } from "../failpoints.js";
import {
  acceptedEventRecord,
  canonicalContent,
  dedupField,
  dedupMatchPartition,
  dedupRecord,
  eventField,
  eventRecordHead,
  eventRecordPrefix,
  parseEventRecord,
} from "../formats/event-record.js";
import { waitIdPrefix } from "../formats/index-members.js";
import { iso } from "../formats/iso.js";
import type { StreamEntry, StreamEvent } from "../formats/stream-entries.js";
import { type TraceCarrier, traceText } from "../formats/trace-context.js";
import type { PartitionKeys } from "../keys.js";
import { isCluster } from "../redis.js";
import {
  type AcceptEventsArgs,
  type Accepted,
  acceptEventsCall,
  acceptEventsResult,
  matchUpTo,
} from "../transitions/acceptEvents.js";
import { annotateWaitsCalls, type BatchAnnotation } from "../transitions/annotateWaits.js";
import {
  type AppendEventsArgs,
  type Appended,
  appendEventsCall,
  appendEventsResults,
} from "../transitions/appendEvents.js";
import { dedupEventsCall, dedupEventsCodes } from "../transitions/dedupEvents.js";
import {
  type AcceptJobs,
  claimAppendEventsCall,
  claimAppendEventsResult,
  ingestDispatchEventsCall,
  ingestDispatchEventsResults,
  ingestEventsCall,
  ingestEventsResult,
} from "../transitions/ingestEvents.js";
import type { Handoff, MatchResult } from "../transitions/matchEvent.js";
import { Code, failure } from "../transitions/replies.js";
import { matchDeltas } from "./resolution.js";

export type IngestResult =
  | { status: "accepted"; event: EventRecord }
  | { status: "duplicate"; event: EventRecord }
  | { status: "rejected"; error: RendezvousError };

/**
 * An event to ingest. `canonicalPayload`, when the caller has it already, must be
 * `canonicalJson(payload)` (the ingest API computes it to size the event); the
 * Store computes it otherwise. `trace`, the trace context the event is accepted with,
 * goes in its stream entry (not its content: a re-send under another is a duplicate).
 */
export type IngestInput = EventInput & { canonicalPayload?: string; trace?: TraceCarrier };

/**
 * The matcher of the ingest's own process (`rendezvous start`), to which the append
 * leaves the match of what it appended, in the same script (acceptEvents): when the
 * matchers' group has caught up, the events are matched there and then, and the
 * matcher's read is never woken for them.
 */
export interface AcceptMatcher {
  /** the matchers' group and this process's matcher consumer */
  readonly matchers: Handoff;
  /** the dispatcher consumer to deliver the new outbox entries to, when it takes them now */
  handoff(): Handoff | undefined;
  /**
   * the queue on which the calls add the continuation jobs of the tenant's waits they
   * resolve themselves (ingestDispatchEvents); none: the dispatcher adds them
   */
  jobs?(tenant: string): AcceptJobs | undefined;
  /**
   * after a call matched: its events in entry order, their results, the outbox entries
   * handed over (less those whose jobs it added), the number of jobs it added
   */
  accepted(
    partition: number,
    events: StreamEvent[],
    results: MatchResult[],
    handed: StreamEntry[] | undefined,
    dispatched: number,
  ): void;
}

export class IngestSystem {
  /** the matcher the append leaves the match to (acceptEvents); none: appendEvents */
  matcher: AcceptMatcher | undefined;

  constructor(private readonly ctx: EngineContext) {}

  /**
   * Dedups and appends events of one producer (already authenticated and validated).
   * Two pipelined round trips for the whole batch: dedup (event-key partitions: claim
   * each event key, or refuse other content under it), then append (match-key
   * partitions: append once per event key). A crash between them loses nothing: the
   * producer's retry finds its claim and appends; an event key appended before answers
   * `duplicate` with the original, whichever attempt appended it. On a single Redis, one
   * round trip: each match-key partition's call claims and appends (with the matcher of
   * this process: accepts) together (ingestEvents); a call that meets another content's
   * claim writes nothing and its events take the two steps.
   */
  async ingest(tenant: string, producer: string, events: IngestInput[]): Promise<IngestResult[]> {
    const { keys, config } = this.ctx;
    const now = this.ctx.now();
    const items = events.map((e) => {
      const eventKey = keys.eventKey(tenant, producer, e.id);
      const matchKey = keys.matchKey(tenant, e.type, e.correlationId);
      const matchPartition = keys.matchPartition(tenant, e.type, e.correlationId);
      // The payload is kept in canonical form (sorted keys, as a JSON column of a
      // database would): one serialization serves the content hash and the record.
      const payloadJson = e.payload === undefined ? undefined : (e.canonicalPayload ?? canonicalJson(e.payload));
      const content = canonicalContent(e, payloadJson);
      const indexKey = keys.indexKey(tenant, e.type, e.correlationId);
      return {
        input: e,
        payloadJson,
        eventKey,
        matchKey,
        indexKey,
        // (only while the indexes may hold legacy members: without it the match reads none)
        legacyIndexKey: keys.legacyIndex ? keys.legacyIndexKey(tenant, indexKey) : undefined,
        eventPartition: keys.partition(keys.place(eventKey)),
        matchPartition,
        dedup: dedupRecord(digest(content, 22), matchPartition),
      };
    });
    type Item = (typeof items)[number];

    const all = items.map((_, i) => i);
    const results: Array<IngestResult | undefined> = new Array(items.length);
    const appended: Appended[] = [];
    // the members appended (or found appended before), and later sends of an event key claimed in this batch
    const toAppend: number[] = [];
    const sameInBatch: Array<[later: number, first: number]> = [];
    const prefix = eventRecordPrefix(producer);
    const matcher = this.matcher;
    const handoff = matcher?.handoff();
    const jobs = matcher?.jobs?.(tenant);
    // the calls that matched what they appended, with their members (in call order)
    const matchedCalls: Array<{ call: Accepted; members: number[] }> = [];
    const appendArgs = (members: number[]): AppendEventsArgs => {
      let keepMs = config.dedupWindowMs;
      const events = members.map((i) => {
        const it = items[i] as Item;
        const retention = retentionFor(config as Config, it.input.type);
        keepMs = Math.max(keepMs, retention);
        return {
          eventKey: it.eventKey,
          head: eventRecordHead(prefix, it, retention),
          trace: traceText(it.input.trace),
        };
      });
      return { keepMs, now, events };
    };
    const acceptArgs = (k: PartitionKeys, members: number[]): AcceptEventsArgs => ({
      ...appendArgs(members),
      fanoutCap: config.fanoutCap,
      retentionMs: config.retentionMs,
      idPrefix: waitIdPrefix(k.partition),
      matchers: (matcher as AcceptMatcher).matchers,
      handoff,
    });
    const accepted = (reply: Accepted, members: number[]): Appended[] => {
      if (reply.matches) matchedCalls.push({ call: reply, members });
      return reply.appended;
    };
    const matchPartitionOf = (i: number) => keys.partition((items[i] as Item).matchPartition);

    try {
      // one step (a single Redis, each event key once in the batch): a call whose claims
      // met a conflict wrote nothing, and its events take the two steps
      let twoSteps = all;
      if (!isCluster(this.ctx.redis) && new Set(items.map((it) => it.eventKey)).size === items.length) {
        twoSteps = [];
        const claimsOf = (members: number[]) => ({
          windowMs: config.dedupWindowMs,
          claims: members.map((i) => ({
            record: (items[i] as Item).dedup,
            partition: (items[i] as Item).eventPartition,
          })),
        });
        const settle = (appended: Appended[] | null, count: number, members: number[]) => {
          if (appended) return appended;
          twoSteps.push(...members);
          return new Array<Appended | undefined>(count);
        };
        // with the jobs added in the accept, the partitions' events together, in calls of at
        // most the events one call may match (no event with a trace context: a traced one is
        // handed out in its span, by the dispatcher)
        const together: number[] = [];
        const apart: number[] = [];
        for (const i of all) (jobs && !(items[i] as Item).input.trace ? together : apart).push(i);
        // (both in one round trip: issued in the same turn; each split before either throws)
        const [across, per] = await Promise.allSettled([
          together.length === 0
            ? []
            : this.ctx.acrossPartitions(
                together,
                matchPartitionOf,
                (groups) =>
                  ingestDispatchEventsCall(
                    groups.map(([k, members]) => ({ k, args: { ...acceptArgs(k, members), ...claimsOf(members) } })),
                    jobs as AcceptJobs,
                  ),
                ingestDispatchEventsResults,
                (call, count, members) => settle(call && accepted(call, members), count, members),
                matchUpTo(config.fanoutCap),
              ),
          apart.length === 0
            ? []
            : this.ctx.perPartition<Appended | undefined>(
                apart,
                matchPartitionOf,
                (k, members) =>
                  matcher
                    ? ingestEventsCall(k, { ...acceptArgs(k, members), ...claimsOf(members) })
                    : claimAppendEventsCall(k, { ...appendArgs(members), ...claimsOf(members) }),
                (reply, count, members) => {
                  const call = matcher ? ingestEventsResult(reply) : null;
                  return settle(
                    matcher ? call && accepted(call, members) : claimAppendEventsResult(reply),
                    count,
                    members,
                  );
                },
              ),
        ]);
        if (across.status === "rejected") throw across.reason;
        if (per.status === "rejected") throw per.reason;
        const one: Array<Appended | undefined> = across.value;
        for (const i of apart) one[i] = per.value[i];
        for (const i of all) {
          const outcome = one[i];
          if (outcome === undefined) continue;
          appended[i] = outcome;
          toAppend.push(i);
        }
      }
      if (twoSteps.length > 0) {
        const dedup = await this.ctx.perPartition(
          twoSteps,
          (i) => (items[i] as Item).eventPartition,
          (k, members) =>
            dedupEventsCall(k, {
              windowMs: config.dedupWindowMs,
              now,
              events: members.map((i) => ({ eventKey: (items[i] as Item).eventKey, record: (items[i] as Item).dedup })),
            }),
          dedupEventsCodes,
        );
        const appendNow: number[] = [];
        const firstInBatch = new Map<string, number>();
        for (const i of twoSteps) {
          const code = Number(dedup[i]);
          const eventKey = (items[i] as Item).eventKey;
          const first = firstInBatch.get(eventKey);
          if (code === Code.PENDING && first !== undefined) sameInBatch.push([i, first]);
          else if (code === Code.CREATED || code === Code.PENDING) {
            appendNow.push(i);
            firstInBatch.set(eventKey, i);
          } else if (code === Code.CONFLICT) {
            results[i] = { status: "rejected", error: new RendezvousError("event_id_conflict") };
          } else throw failure(code);
        }
        const two = await this.ctx.perPartition<Appended>(
          appendNow,
          matchPartitionOf,
          (k, members) =>
            matcher ? acceptEventsCall(k, acceptArgs(k, members)) : appendEventsCall(k, appendArgs(members)),
          matcher ? (reply, _count, members) => accepted(acceptEventsResult(reply), members) : appendEventsResults,
        );
        for (const i of appendNow) {
          appended[i] = two[i] as Appended;
          toAppend.push(i);
        }
      }
    } finally {
      // (also when another partition's call failed: what matched is handed on and counted)
      if (matcher && matchedCalls.length > 0) await this.#matched(matcher, matchedCalls, (i) => items[i] as Item);
    }
    failpoint("ingest.after-append");

    const duplicates: IngestResult[] = [];
    const acceptedAtOf = new Map<string, string>();
    for (const i of toAppend) {
      const outcome = appended[i] as Appended;
      const it = items[i] as Item;
      if (outcome.existing !== undefined) {
        results[i] = { status: "duplicate", event: parseEventRecord(outcome.existing, this.ctx.now() ?? Date.now()) };
        duplicates.push(results[i]);
        continue;
      }
      const sid = outcome.streamId;
      // the events of one append call share their stream id: one date per call
      let acceptedAt = acceptedAtOf.get(sid);
      if (acceptedAt === undefined) {
        acceptedAt = iso(Number(sid.slice(0, sid.indexOf("-"))));
        acceptedAtOf.set(sid, acceptedAt);
      }
      results[i] = { status: "accepted", event: acceptedEventRecord(tenant, producer, it.input, acceptedAt, sid) };
    }

    for (const [later, first] of sameInBatch) {
      const original = results[first];
      if (original && original.status !== "rejected") results[later] = { status: "duplicate", event: original.event };
    }
    if (duplicates.length > 0) await this.noteDuplicates(duplicates);
    return results as IngestResult[];
  }

  /**
   * Hands what acceptEvents calls matched to the matcher, per call: its appended events
   * in order (the members it appended, as the script's `fresh`); then notes the tenants'
   * counts as the matcher's match does.
   */
  async #matched(
    matcher: AcceptMatcher,
    calls: ReadonlyArray<{ call: Accepted; members: number[] }>,
    item: (i: number) => { eventKey: string; matchPartition: number; input: IngestInput },
  ): Promise<void> {
    const eventKeys: string[] = [];
    const results: MatchResult[] = [];
    for (const { call, members } of calls) {
      const matches = call.matches ?? [];
      const events: StreamEvent[] = [];
      let partition = 0;
      members.forEach((i, j) => {
        const outcome = call.appended[j];
        if (outcome?.streamId === undefined) return;
        const it = item(i);
        partition = it.matchPartition;
        const event: StreamEvent = { streamId: outcome.streamId, eventKey: it.eventKey };
        if (it.input.trace) event.trace = it.input.trace;
        events.push(event);
      });
      matcher.accepted(partition, events, matches, call.handed, call.dispatched ?? 0);
      for (const e of events) eventKeys.push(e.eventKey);
      results.push(...matches);
    }
    await this.ctx.noteCounts(matchDeltas(eventKeys, results));
  }

  /** Records `duplicate_ignored` once per (wait, event) on the waits a re-sent event reached. */
  private async noteDuplicates(duplicates: Array<IngestResult | undefined>): Promise<void> {
    const entries: BatchAnnotation[] = [];
    for (const r of duplicates) {
      if (r?.status !== "duplicate") continue;
      const ref = { pr: r.event.producer, id: r.event.id, at: Date.parse(r.event.acceptedAt), sid: r.event.streamId };
      for (const waitId of [...r.event.matchedWaits, ...r.event.lateFor]) {
        entries.push({ waitId, what: "duplicate_ignored", detail: { ev: ref }, once: true });
      }
    }
    const calls = annotateWaitsCalls(this.ctx.keys, entries, this.ctx.now());
    if (calls.length > 0) await this.ctx.runAll(calls);
  }

  /** An accepted event of a tenant's producer, or null. */
  async getEvent(tenant: string, producer: string, eventId: string): Promise<EventRecord | null> {
    const { keys, redis } = this.ctx;
    const eventKey = keys.eventKey(tenant, producer, eventId);
    const dedupRaw = await redis.hget(
      keys.partition(keys.eventPartition(tenant, producer, eventId)).events,
      dedupField(eventKey),
    );
    if (!dedupRaw) return null;
    const raw = await redis.hget(keys.partition(dedupMatchPartition(dedupRaw)).events, eventField(eventKey));
    return raw ? parseEventRecord(raw, this.ctx.now() ?? Date.now()) : null;
  }
}
