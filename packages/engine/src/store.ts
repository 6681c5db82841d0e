/**
 * The typed Store: every state change of rendezvous is one Lua transition over one
 * partition; this class builds their arguments, runs them (pipelined where a batch
 * allows) and turns their replies into typed results. It never reads, changes and
 * writes wait state itself.
 */

import {
  type EventInput,
  type EventRecord,
  type HistoryWhat,
  RendezvousError,
  toWellFormed,
  type Wait,
  type WaitSpec,
} from "@rendezvous/protocol";
import type { ChainableCommander } from "ioredis";
import { type BatchCommand, type BatchReply, execBatch } from "./batch.js";
import { Code } from "./codes.js";
import { type Config, retentionFor } from "./config.js";
import { canonicalJson, decodeParts, digest, encodeParts } from "./encoding.js";
import { failpoint } from "./failpoints.js";
import { KeyLayout, type PartitionKeys, tagPartition } from "./keys.js";
import {
  dedupMatchPartition,
  dedupRecord,
  iso,
  parseWaitRecord,
  type RawEvent,
  type RawWait,
  toEventRecord,
  toWait,
} from "./records.js";
import {
  annotateWaitArgs,
  appendEventsArgs,
  type Commander,
  cancelWaitArgs,
  claimRunPositionArgs,
  consumeWaitArgs,
  dedupEventsArgs,
  defineScripts,
  deliverCandidatesArgs,
  deliverWaitsArgs,
  expireRecordsArgs,
  forgetRunPositionsArgs,
  matchEventArgs,
  type RedisLike,
  recordRejectionArgs,
  registerWaitArgs,
  runScript,
  type ScriptCall,
  timeoutWaitArgs,
} from "./scripts.js";

/** What the Store needs of the config. */
export type StoreConfig = Pick<
  Config,
  | "partitions"
  | "retentionMs"
  | "dedupWindowMs"
  | "fanoutCap"
  | "maxTimeoutMs"
  | "maxMetadataBytes"
  | "maxListScan"
  | "maxListPageBytes"
  | "eventTypes"
>;

export interface StoreOptions {
  redis: RedisLike;
  config: StoreConfig;
  /** key prefix of every Redis key @defaultValue "rdv" */
  prefix?: string;
  /**
   * Fixes the clock of the transitions (tests only). Returning undefined, or leaving
   * it out, uses Redis TIME. A fixed clock must not go backwards: it also sets the
   * stream ids of appended events.
   */
  clock?: () => number | undefined;
}

export type IngestResult =
  | { status: "accepted"; event: EventRecord }
  | { status: "duplicate"; event: EventRecord }
  | { status: "rejected"; error: RendezvousError };

/** A refused event as remembered for `explain` (no payload). */
export interface Rejection {
  producer: string;
  eventId: string | null;
  /** an error code of docs/api.md: invalid_event, forbidden_event_type, unauthorized, … */
  reason: string;
  detail: string | null;
  at: string;
}

/** Most refusals kept per match key. */
export const REJECTIONS_KEPT = 20;

export interface MatchResult {
  /** matched / buffered / late; duplicate = the event key belongs to another entry; missing = no record */
  status: "matched" | "buffered" | "late" | "duplicate" | "missing";
  matched: string[];
  late: string[];
}

/**
 * What `timeout` did. `backlog`: not now, an event accepted at or before the deadline is
 * still unprocessed (one of the wait's match key, or more than 100 events or stream
 * entries of its partition): retry shortly.
 */
export type TimeoutResult =
  | { outcome: "timed_out"; wait: Wait }
  | { outcome: "not_waiting"; wait: Wait }
  | { outcome: "not_found" }
  | { outcome: "not_due"; deadline: number | null }
  | { outcome: "backlog"; deadline: number };

export interface DeliverRequest {
  eventType: string;
  correlationId?: string;
  payload?: Record<string, unknown>;
  all?: boolean;
}

export interface ConsumeResult {
  first: boolean;
  consumption: { by: string; at: string };
  wait: Wait;
}

type Reply = [number, ...unknown[]];

/** Maps a reply code that is an API error to the typed error (the one mapping). */
function failure(code: number, context: Record<string, unknown> = {}): RendezvousError {
  switch (code) {
    case Code.NOT_FOUND:
      return new RendezvousError("not_found");
    case Code.NOT_WAITING:
      return new RendezvousError("not_waiting", undefined, context);
    case Code.NOT_RESOLVED:
      return new RendezvousError("not_resolved", undefined, context);
    default:
      return new RendezvousError("internal", `unexpected reply code ${code}`, context);
  }
}

function asReply(value: unknown, script: string): Reply {
  if (!Array.isArray(value) || typeof value[0] !== "number") {
    throw new RendezvousError("internal", `${script}: malformed reply`);
  }
  return value as Reply;
}

function parseWait(raw: unknown): RawWait {
  return parseWaitRecord(String(raw));
}

function toMs(isoTime: string | undefined): number | undefined {
  return isoTime === undefined ? undefined : Date.parse(isoTime);
}

/**
 * An event to ingest. `canonicalPayload`, when the caller has it already, must be
 * `canonicalJson(payload)` (the ingest API computes it to size the event); the
 * Store computes it otherwise.
 */
export type IngestInput = EventInput & { canonicalPayload?: string };

export class Store {
  readonly keys: KeyLayout;
  readonly redis: RedisLike;
  readonly config: StoreConfig;
  readonly #clock: () => number | undefined;

  constructor(opts: StoreOptions) {
    this.redis = opts.redis;
    this.config = opts.config;
    this.keys = new KeyLayout(opts.prefix ?? "rdv", opts.config.partitions);
    this.#clock = opts.clock ?? (() => undefined);
    defineScripts(this.redis);
  }

  /**
   * The same Store (keys, config, clock) on another connection. Commands of one
   * connection are answered in order, so a worker that sends long pipelines (the
   * scheduler's timeouts) uses a connection of its own: the API's commands are not
   * queued behind them.
   */
  withConnection(redis: RedisLike): Store {
    return new Store({ redis, config: this.config, prefix: this.keys.prefix, clock: this.#clock });
  }

  private now(): number | undefined {
    return this.#clock();
  }

  private async run(call: ScriptCall): Promise<Reply> {
    return asReply(await runScript(this.redis, call), call.script);
  }

  /**
   * Runs several scripts in one round trip (on a cluster: one pipeline per partition,
   * concurrently); a script error becomes a thrown error.
   */
  private async runAll(calls: ScriptCall[]): Promise<Reply[]> {
    if (calls.length === 0) return [];
    if (calls.length === 1) return [await this.run(calls[0] as ScriptCall)];
    const results = await execBatch(
      this.redis,
      calls.map(
        (call): BatchCommand => ({
          key: call.keys[0] ?? null,
          add: (pipeline) => void runScript(pipeline as Commander, call),
        }),
      ),
    );
    return results.map(([err, value], i) => {
      if (err) throw err;
      return asReply(value, calls[i]?.script ?? "?");
    });
  }
  /**
   * Runs a batched script once per partition over the items it concerns (items of
   * one partition keep their order) and hands back each item's own reply.
   */
  private async perPartition(
    indices: number[],
    partitionOf: (i: number) => PartitionKeys,
    call: (k: PartitionKeys, members: number[]) => ScriptCall,
    /** the script's reply for a call → one value per member (default: the reply is that list) */
    split: (reply: unknown, count: number) => unknown[] = (reply) => (Array.isArray(reply) ? reply : []),
  ): Promise<unknown[]> {
    const groups = new Map<PartitionKeys, number[]>();
    for (const i of indices) {
      const k = partitionOf(i);
      const members = groups.get(k);
      if (members) members.push(i);
      else groups.set(k, [i]);
    }
    const entries = [...groups];
    const calls = entries.map(([k, members]) => call(k, members));
    const results = await execBatch(
      this.redis,
      calls.map(
        (c): BatchCommand => ({ key: c.keys[0] ?? null, add: (pipeline) => void runScript(pipeline as Commander, c) }),
      ),
    );
    // one value per item index (a sparse array: items not in `indices` stay empty)
    const out: unknown[] = [];
    entries.forEach(([, members], g) => {
      const [err, value] = results[g] ?? [null, null];
      if (err) throw err;
      const values = split(value, members.length);
      if (values.length !== members.length) {
        throw new RendezvousError("internal", `${calls[g]?.script}: malformed batch reply`);
      }
      members.forEach((i, j) => {
        out[i] = values[j];
      });
    });
    return out;
  }

  // ---------------------------------------------------------------- ingest

  /**
   * Dedups and appends events of one producer (already authenticated and validated).
   * Two pipelined round trips for the whole batch: dedup (event-key partitions: claim
   * each event key, or refuse other content under it), then append (match-key
   * partitions: append once per event key). A crash between them loses nothing: the
   * producer's retry finds its claim and appends; an event key appended before answers
   * `duplicate` with the original, whichever attempt appended it.
   */
  async ingest(tenant: string, producer: string, events: IngestInput[]): Promise<IngestResult[]> {
    const now = this.now();
    const items = events.map((e) => {
      const eventKey = this.keys.eventKey(tenant, producer, e.id);
      const matchKey = this.keys.matchKey(tenant, e.type, e.correlationId);
      const matchPartition = this.keys.place(matchKey);
      // The payload is kept in canonical form (sorted keys, as a JSON column of a
      // database would): one serialization serves the content hash and the record.
      const payloadJson = e.payload === undefined ? undefined : (e.canonicalPayload ?? canonicalJson(e.payload));
      const content = canonicalContent(e, payloadJson);
      return {
        input: e,
        payloadJson,
        eventKey,
        matchKey,
        eventPartition: this.keys.partition(this.keys.place(eventKey)),
        matchPartition,
        dedup: dedupRecord(digest(content, 22), matchPartition),
      };
    });
    type Item = (typeof items)[number];

    const all = items.map((_, i) => i);
    const dedup = await this.perPartition(
      all,
      (i) => (items[i] as Item).eventPartition,
      (k, members) =>
        dedupEventsArgs(k, {
          windowMs: this.config.dedupWindowMs,
          now,
          events: members.map((i) => ({ eventKey: (items[i] as Item).eventKey, record: (items[i] as Item).dedup })),
        }),
      // one code digit per event
      (reply) => Array.from(String(reply), Number),
    );

    const results: Array<IngestResult | undefined> = new Array(items.length);
    const toAppend: number[] = [];
    const firstInBatch = new Map<string, number>();
    const sameInBatch: Array<[later: number, first: number]> = [];
    for (const i of all) {
      const code = Number(dedup[i]);
      const eventKey = (items[i] as Item).eventKey;
      const first = firstInBatch.get(eventKey);
      if (code === Code.PENDING && first !== undefined) sameInBatch.push([i, first]);
      else if (code === Code.CREATED || code === Code.PENDING) {
        toAppend.push(i);
        firstInBatch.set(eventKey, i);
      } else if (code === Code.CONFLICT) {
        results[i] = { status: "rejected", error: new RendezvousError("event_id_conflict") };
      } else throw failure(code);
    }

    // the part of every event record this call writes that is the same for all of them
    // (tenant, type and correlation id are not repeated: the encoded match key holds them)
    const headPrefix = `{"pr":${JSON.stringify(producer)},"id":`;
    const appended = await this.perPartition(
      toAppend,
      (i) => this.keys.partition((items[i] as Item).matchPartition),
      (k, members) => {
        let keepMs = this.config.dedupWindowMs;
        const events = members.map((i) => {
          const it = items[i] as Item;
          const e = it.input;
          const retention = retentionFor(this.config as Config, e.type);
          keepMs = Math.max(keepMs, retention);
          return { eventKey: it.eventKey, head: eventRecordHead(headPrefix, it, retention) };
        });
        return appendEventsArgs(k, { keepMs, now, events });
      },
      // { streamId, one code digit per event, the stored records of the EXISTS ones }
      (reply) => {
        const [sid, codes, records] = reply as [string, string, string[]];
        let r = 0;
        return Array.from(String(codes), (c) =>
          Number(c) === Code.EXISTS ? [Code.EXISTS, records[r++]] : [Number(c), String(sid)],
        );
      },
    );
    failpoint("ingest.after-append");

    const duplicates: IngestResult[] = [];
    const acceptedAtOf = new Map<string, string>();
    for (const i of toAppend) {
      const [code, value] = asReply(appended[i], "appendEvents");
      const it = items[i] as Item;
      if (code === Code.EXISTS) {
        const event = toEventRecord(JSON.parse(String(value)) as RawEvent, this.now() ?? Date.now());
        results[i] = { status: "duplicate", event };
        duplicates.push(results[i]);
        continue;
      }
      const sid = String(value);
      // the events of one append call share their stream id: one date per call
      let acceptedAt = acceptedAtOf.get(sid);
      if (acceptedAt === undefined) {
        acceptedAt = iso(Number(sid.slice(0, sid.indexOf("-"))));
        acceptedAtOf.set(sid, acceptedAt);
      }
      results[i] = {
        status: "accepted",
        event: {
          id: it.input.id,
          tenant,
          producer,
          type: it.input.type,
          correlationId: it.input.correlationId,
          occurredAt: it.input.occurredAt ?? null,
          acceptedAt,
          streamId: sid,
          status: "pending",
          matchedWaits: [],
          lateFor: [],
        },
      };
    }

    for (const [later, first] of sameInBatch) {
      const original = results[first];
      if (original && original.status !== "rejected") results[later] = { status: "duplicate", event: original.event };
    }
    if (duplicates.length > 0) await this.noteDuplicates(duplicates);
    return results as IngestResult[];
  }

  /** Records `duplicate_ignored` once per (wait, event) on the waits a re-sent event reached. */
  private async noteDuplicates(duplicates: Array<IngestResult | undefined>): Promise<void> {
    const calls: ScriptCall[] = [];
    for (const r of duplicates) {
      if (r?.status !== "duplicate") continue;
      const ref = { pr: r.event.producer, id: r.event.id, at: Date.parse(r.event.acceptedAt), sid: r.event.streamId };
      for (const waitId of [...r.event.matchedWaits, ...r.event.lateFor]) {
        const p = this.keys.waitPartition(waitId);
        if (p === null) continue;
        calls.push(
          annotateWaitArgs(this.keys.partition(p), {
            waitId,
            tenantPrefix: "",
            what: "duplicate_ignored",
            detail: JSON.stringify({ ev: ref }),
            once: true,
            now: this.now(),
          }),
        );
      }
    }
    await this.runAll(calls);
  }

  /** An accepted event of a tenant's producer, or null. */
  async getEvent(tenant: string, producer: string, eventId: string): Promise<EventRecord | null> {
    const eventKey = this.keys.eventKey(tenant, producer, eventId);
    const dedupRaw = await this.redis.hget(
      this.keys.partition(this.keys.eventPartition(tenant, producer, eventId)).events,
      `d:${eventKey}`,
    );
    if (!dedupRaw) return null;
    const raw = await this.redis.hget(this.keys.partition(dedupMatchPartition(dedupRaw)).events, `e:${eventKey}`);
    return raw ? toEventRecord(JSON.parse(raw) as RawEvent, this.now() ?? Date.now()) : null;
  }

  /**
   * Remembers refused events (capped per match key, kept for retention), one
   * pipelined round trip. Only events whose type and correlation id are readable
   * can be placed; the caller skips the others.
   */
  async recordRejections(
    tenant: string,
    refusals: Array<{
      producer: string;
      eventType: string;
      correlationId: string;
      eventId?: string;
      reason: string;
      detail?: string;
    }>,
  ): Promise<void> {
    const now = this.now();
    await this.runAll(
      refusals.map((r) =>
        recordRejectionArgs(this.keys.partition(this.keys.matchPartition(tenant, r.eventType, r.correlationId)), {
          matchKey: this.keys.matchKey(tenant, r.eventType, r.correlationId),
          // well-formed: the script's cjson refuses the escape of a lone surrogate
          refusal: JSON.stringify({
            pr: r.producer,
            id: r.eventId === undefined ? undefined : toWellFormed(r.eventId),
            reason: r.reason,
            detail: r.detail === undefined ? undefined : toWellFormed(r.detail.slice(0, 500)),
          }),
          cap: REJECTIONS_KEPT,
          keepMs: this.config.retentionMs,
          now,
        }),
      ),
    );
  }

  /** The refusals remembered for a match key, oldest first. */
  async rejections(tenant: string, eventType: string, correlationId: string): Promise<Rejection[]> {
    const k = this.keys.partition(this.keys.matchPartition(tenant, eventType, correlationId));
    const raw = await this.redis.hget(k.rejected, this.keys.matchKey(tenant, eventType, correlationId));
    if (!raw) return [];
    const list = JSON.parse(raw) as Array<{ pr: string; id?: string; reason: string; detail?: string; at: number }>;
    return list.map((r) => ({
      producer: r.pr,
      eventId: r.id ?? null,
      reason: r.reason,
      detail: r.detail ?? null,
      at: iso(r.at),
    }));
  }

  // ---------------------------------------------------------------- waits

  /**
   * Registers a wait (idempotent on (tenant, runId, position)). Two round trips:
   * claim the run position in the run key's partition, then create the wait in the
   * match key's partition, matching a buffered event at once.
   * @throws RendezvousError wait_conflict, invalid_request, payload_too_large (metadata over maxMetadataBytes)
   */
  async register(tenant: string, spec: WaitSpec): Promise<{ created: boolean; wait: Wait }> {
    const deadlineMs = toMs(spec.deadline);
    const sinceMs = toMs(spec.since);
    if (spec.timeoutMs !== undefined && spec.timeoutMs > this.config.maxTimeoutMs) {
      throw new RendezvousError("invalid_request", "timeoutMs exceeds maxTimeoutMs", {
        issues: [{ path: ["timeoutMs"], message: `at most ${this.config.maxTimeoutMs}` }],
      });
    }
    if (deadlineMs !== undefined && deadlineMs - (this.now() ?? Date.now()) > this.config.maxTimeoutMs) {
      throw new RendezvousError("invalid_request", "deadline lies further ahead than maxTimeoutMs", {
        issues: [{ path: ["deadline"], message: `at most ${this.config.maxTimeoutMs} ms ahead` }],
      });
    }
    const metadata = spec.metadata === undefined ? undefined : JSON.stringify(spec.metadata);
    if (metadata !== undefined && Buffer.byteLength(metadata) > this.config.maxMetadataBytes) {
      throw new RendezvousError(
        "payload_too_large",
        `metadata exceeds maxMetadataBytes (${this.config.maxMetadataBytes} bytes)`,
        {
          maxMetadataBytes: this.config.maxMetadataBytes,
        },
      );
    }
    const partition = this.keys.matchPartition(tenant, spec.eventType, spec.correlationId);
    const waitId = this.keys.waitId(tenant, spec.runId, spec.position, partition);
    const defHash = digest(
      canonicalJson({
        eventType: spec.eventType,
        correlationId: spec.correlationId,
        timeoutMs: spec.timeoutMs,
        deadline: deadlineMs,
        since: sinceMs,
      }),
      5,
    );
    const runPosition = this.keys.runPosition(tenant, spec.runId, spec.position);
    // the member stores the partition only (tagged): with the position digest it names the wait id
    const [claim, claimedTag] = await this.run(
      claimRunPositionArgs(this.keys.partition(this.keys.runPartition(tenant, spec.runId)), {
        runPosition,
        waitId: tagPartition(partition),
        defHash,
      }),
    );
    if (claim === Code.CONFLICT) {
      throw new RendezvousError("wait_conflict", undefined, {
        waitId: this.keys.waitIdOfRunMember(`${runPosition}${String(claimedTag)}`),
      });
    }
    const record = {
      mk: this.keys.matchKey(tenant, spec.eventType, spec.correlationId),
      r: spec.runId,
      p: spec.position,
      j: spec.externalJobId,
      m: metadata,
    };
    const [code, raw] = await this.run(
      registerWaitArgs(this.keys.partition(partition), {
        waitId,
        record: JSON.stringify(record),
        timeoutMs: spec.timeoutMs,
        deadlineMs,
        sinceMs,
        retentionMs: this.config.retentionMs,
        now: this.now(),
      }),
    );
    if (code !== Code.CREATED && code !== Code.EXISTS) throw failure(code);
    return { created: code === Code.CREATED, wait: toWait(waitId, parseWait(raw)) };
  }

  /** The raw record of a wait, whatever its tenant (internal). */
  private async rawWait(waitId: string): Promise<RawWait | null> {
    const p = this.keys.waitPartition(waitId);
    if (p === null) return null;
    const raw = await this.redis.hget(this.keys.partition(p).waits, waitId);
    return raw ? parseWait(raw) : null;
  }

  /** A wait of the tenant (null = any tenant, admin), or null. */
  async getWait(tenant: string | null, waitId: string): Promise<Wait | null> {
    const raw = await this.rawWait(waitId);
    if (!raw) return null;
    const wait = toWait(waitId, raw);
    return tenant === null || wait.tenant === tenant ? wait : null;
  }

  /** Several waits by id, any tenant (internal: dispatcher), in one round trip; null where missing. */
  async getWaits(waitIds: string[]): Promise<Array<Wait | null>> {
    if (waitIds.length === 0) return [];
    const results = await this.perWaitRecord(waitIds, (pipeline, key, id) => pipeline.hget(key, id));
    return results.map(([err, raw], i) => {
      if (err) throw err;
      return raw ? toWait(waitIds[i] as string, parseWait(raw as string)) : null;
    });
  }

  /**
   * One command per wait id on its record (`key` = its partition's waits hash, `id` the
   * field), in one round trip; an id of no partition answers "". Every batched read of
   * wait records goes through here.
   */
  perWaitRecord(
    waitIds: string[],
    command: (pipeline: ChainableCommander, key: string, id: string) => unknown,
  ): Promise<BatchReply[]> {
    return execBatch(
      this.redis,
      waitIds.map((id): BatchCommand => {
        const p = this.keys.waitPartition(id);
        if (p === null) return { key: null, add: (pipeline) => pipeline.echo("") };
        const key = this.keys.partition(p).waits;
        return { key, add: (pipeline) => command(pipeline, key, id) };
      }),
    );
  }

  private partitionOf(waitId: string) {
    const p = this.keys.waitPartition(waitId);
    if (p === null) throw new RendezvousError("not_found");
    return this.keys.partition(p);
  }

  private tenantPrefix(tenant: string | null): string {
    return tenant === null ? "" : encodeParts(tenant);
  }

  /** Cancels a waiting wait. @throws RendezvousError not_found, not_waiting */
  async cancel(tenant: string | null, waitId: string): Promise<Wait> {
    const [code, raw] = await this.run(
      cancelWaitArgs(this.partitionOf(waitId), {
        waitId,
        tenantPrefix: this.tenantPrefix(tenant),
        retentionMs: this.config.retentionMs,
        now: this.now(),
      }),
    );
    if (code === Code.RESOLVED) return toWait(waitId, parseWait(raw));
    if (code === Code.NOT_WAITING) throw failure(code, { state: toWait(waitId, parseWait(raw)).state });
    throw failure(code);
  }

  /** Claims a settled wait's continuation; `first` is true for exactly one caller. */
  async consume(tenant: string | null, waitId: string, worker: string): Promise<ConsumeResult> {
    const [code, first, raw] = await this.run(
      consumeWaitArgs(this.partitionOf(waitId), {
        waitId,
        tenantPrefix: this.tenantPrefix(tenant),
        worker,
        now: this.now(),
      }),
    );
    if (code !== Code.OK) throw failure(code);
    const wait = toWait(waitId, parseWait(raw));
    return { first: first === 1, consumption: wait.consumption as ConsumeResult["consumption"], wait };
  }

  /** Sets the external job id (not part of the definition) and records job_attached. */
  async attachJob(tenant: string | null, waitId: string, externalJobId: string): Promise<Wait> {
    return this.annotate(tenant, waitId, "job_attached", { j: externalJobId });
  }

  /** Appends a timeline entry (dispatcher, sweeper, ingest). */
  async annotate(
    tenant: string | null,
    waitId: string,
    what: Exclude<HistoryWhat, "registered" | "resolved" | "late_event" | "consumed">,
    detail: Record<string, unknown> = {},
    opts: { once?: boolean } = {},
  ): Promise<Wait> {
    const [code, raw] = await this.run(
      annotateWaitArgs(this.partitionOf(waitId), {
        waitId,
        tenantPrefix: this.tenantPrefix(tenant),
        what,
        detail: JSON.stringify(detail),
        once: opts.once ?? false,
        now: this.now(),
      }),
    );
    if (code !== Code.OK && code !== Code.EXISTS) throw failure(code);
    return toWait(waitId, parseWait(raw));
  }

  /** Appends timeline entries to several waits (any tenant; internal) in one round trip. */
  async annotateMany(
    entries: Array<{
      waitId: string;
      what: "continuation_dispatched" | "sweeper_rescheduled";
      detail: Record<string, unknown>;
      /** skip when the timeline already has this entry (same kind and detail) */
      once?: boolean;
    }>,
  ): Promise<void> {
    const now = this.now();
    await this.runAll(
      entries.flatMap(({ waitId, what, detail, once }) => {
        const p = this.keys.waitPartition(waitId);
        if (p === null) return [];
        return [
          annotateWaitArgs(this.keys.partition(p), {
            waitId,
            tenantPrefix: "",
            what,
            detail: JSON.stringify(detail),
            once: once ?? false,
            now,
          }),
        ];
      }),
    );
  }

  /**
   * Resolves waiting waits of the tenant directly (docs/api.md, Direct delivery).
   * Without a correlation id every partition is asked (one pipelined round trip);
   * more than one candidate without `all` is refused and nothing is resolved.
   * @throws RendezvousError ambiguous
   */
  async deliver(tenant: string, req: DeliverRequest): Promise<{ delivered: string[]; matched: number }> {
    const now = this.now();
    const partitions =
      req.correlationId === undefined
        ? this.keys.allPartitions()
        : [this.keys.matchPartition(tenant, req.eventType, req.correlationId)];
    const matchKeyPrefix =
      req.correlationId === undefined
        ? encodeParts(tenant, req.eventType)
        : encodeParts(tenant, req.eventType, req.correlationId);
    const indexPrefix = this.keys.indexKey(tenant, req.eventType, req.correlationId);
    const found = await this.runAll(
      partitions.map((p) =>
        deliverCandidatesArgs(this.keys.partition(p), {
          indexPrefix,
          matchKeyPrefix,
          limit: this.config.fanoutCap,
          now,
        }),
      ),
    );
    const byPartition = found.map(([, ids], i) => ({ p: partitions[i] as number, ids: (ids as string[]) ?? [] }));
    const candidates = byPartition.flatMap((x) => x.ids);
    if (candidates.length > 1 && !req.all) {
      throw new RendezvousError("ambiguous", undefined, { candidates });
    }
    const resolved = await this.runAll(
      byPartition
        .filter((x) => x.ids.length > 0)
        .map((x) =>
          deliverWaitsArgs(this.keys.partition(x.p), {
            tenantPrefix: encodeParts(tenant),
            payload: req.payload === undefined ? undefined : JSON.stringify(req.payload),
            retentionMs: this.config.retentionMs,
            waitIds: x.ids,
            now,
          }),
        ),
    );
    return { delivered: resolved.flatMap(([, ids]) => (ids as string[]) ?? []), matched: candidates.length };
  }

  // ---------------------------------------------------------------- workers

  /** Runs the match for stream entries of one partition, in one round trip. */
  async match(partition: number, entries: Array<{ streamId: string; eventKey: string }>): Promise<MatchResult[]> {
    const k = this.keys.partition(partition);
    const now = this.now();
    const replies = await this.runAll(
      entries.map((e) =>
        matchEventArgs(k, {
          streamId: e.streamId,
          eventKey: e.eventKey,
          fanoutCap: this.config.fanoutCap,
          retentionMs: this.config.retentionMs,
          now,
        }),
      ),
    );
    return replies.map(([code, status, matched, late]) => {
      if (code === Code.DUPLICATE) return { status: "duplicate", matched: [], late: [] };
      if (code === Code.NOT_FOUND) return { status: "missing", matched: [], late: [] };
      if (code !== Code.OK) throw failure(code);
      const s = status === "m" ? "matched" : status === "b" ? "buffered" : status === "l" ? "late" : null;
      if (!s) throw new RendezvousError("internal", `matchEvent: status ${String(status)}`);
      return { status: s, matched: (matched as string[]) ?? [], late: (late as string[]) ?? [] };
    });
  }

  /** Tries to time out a wait by the event-time rule. */
  async timeout(waitId: string): Promise<TimeoutResult> {
    const [result] = await this.timeoutMany([waitId]);
    return result as TimeoutResult;
  }

  /** Tries to time out several waits, in one round trip. */
  async timeoutMany(waitIds: string[]): Promise<TimeoutResult[]> {
    const now = this.now();
    const known = waitIds.map((id) => ({ id, p: this.keys.waitPartition(id) }));
    const calls = known.flatMap(({ id, p }) =>
      p === null
        ? []
        : [timeoutWaitArgs(this.keys.partition(p), { waitId: id, retentionMs: this.config.retentionMs, now })],
    );
    const replies = await this.runAll(calls);
    let j = 0;
    return known.map(({ id, p }) => {
      if (p === null) return { outcome: "not_found" };
      return this.timeoutResult(id, replies[j++] as Reply);
    });
  }

  private timeoutResult(waitId: string, [code, value]: Reply): TimeoutResult {
    switch (code) {
      case Code.RESOLVED:
        return { outcome: "timed_out", wait: toWait(waitId, parseWait(value)) };
      case Code.NOT_WAITING:
        return { outcome: "not_waiting", wait: toWait(waitId, parseWait(value)) };
      case Code.NOT_FOUND:
        return { outcome: "not_found" };
      case Code.NOT_DUE:
        return { outcome: "not_due", deadline: value === "" ? null : Number(value) };
      case Code.BACKLOG:
        return { outcome: "backlog", deadline: Number(value) };
      default:
        throw failure(code);
    }
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
    const now = this.now();
    const replies = await this.runAll(partitions.map((p) => expireRecordsArgs(this.keys.partition(p), { limit, now })));
    const byRunPartition = new Map<number, Array<{ runPosition: string; tag: string }>>();
    for (const [, , , expired] of replies) {
      const flat = (expired ?? []) as string[];
      for (let i = 0; i + 3 < flat.length; i += 4) {
        const [tenant = ""] = decodeParts(flat[i] as string, 1);
        const runId = flat[i + 1] as string;
        const position = flat[i + 2] as string;
        const waitPartition = this.keys.waitPartition(flat[i + 3] as string);
        if (waitPartition === null) continue;
        const rp = this.keys.runPartition(tenant, runId);
        const list = byRunPartition.get(rp) ?? [];
        list.push({ runPosition: this.keys.runPosition(tenant, runId, position), tag: tagPartition(waitPartition) });
        byRunPartition.set(rp, list);
      }
    }
    if (byRunPartition.size > 0) {
      await this.runAll(
        [...byRunPartition].map(([rp, entries]) => forgetRunPositionsArgs(this.keys.partition(rp), { entries })),
      );
    }
    return replies.map(([, handled, more]) => ({ handled: Number(handled), more: more === 1 }));
  }
}

/**
 * The event record JSON {pr, id, mk, oa?, pl?, rt} without its closing brace:
 * appendEvents completes it with the stream id, so no script decodes or encodes it.
 * The payload is kept as canonical JSON text (`pl`). Tenant, type and correlation id
 * are read from the encoded match key `mk` (records of earlier versions also carry
 * them as t, ty and c; `toEventRecord` reads both).
 */
function eventRecordHead(
  prefix: string,
  item: { input: EventInput; matchKey: string; payloadJson: string | undefined },
  retention: number,
): string {
  const e = item.input;
  const j = JSON.stringify;
  let head = `${prefix}${j(e.id)},"mk":${j(item.matchKey)}`;
  if (e.occurredAt !== undefined) head += `,"oa":${j(e.occurredAt)}`;
  if (item.payloadJson !== undefined) head += `,"pl":${j(item.payloadJson)}`;
  return `${head},"rt":${retention}`;
}

/**
 * Canonical JSON (RFC 8785) of {type, correlationId, occurredAt?, payload?}, the
 * content that dedup compares, built around the already canonical payload text
 * (the same text `canonicalJson` gives for the whole object: keys in sorted order).
 */
function canonicalContent(e: EventInput, payloadJson: string | undefined): string {
  const j = JSON.stringify;
  let out = `{"correlationId":${j(e.correlationId)}`;
  if (e.occurredAt !== undefined) out += `,"occurredAt":${j(e.occurredAt)}`;
  if (payloadJson !== undefined) out += `,"payload":${payloadJson}`;
  return `${out},"type":${j(e.type)}}`;
}
