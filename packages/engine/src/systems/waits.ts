/**
 * Waits: registration, reads of wait records, and the transitions a caller asks of one
 * wait (cancel, consume, annotate) or of the waits of a match key (direct delivery).
 */

import { type HistoryWhat, RendezvousError, type Wait, type WaitSpec } from "@rendezvous/protocol";
import type { BatchCommand } from "../batch.js";
import { canonicalJson, digest, encodeParts } from "../encoding.js";
import type { EngineContext } from "../engine-context.js";
import { tagPartition, untagPartition, waitIdPrefix } from "../formats/index-members.js";
import { type TraceCarrier, traceText } from "../formats/trace-context.js";
import { parseWaitRecord, type RawWait, registrationRecord, toWait, waitOf } from "../formats/wait-record.js";
import { annotateWaitCall, annotateWaitResult } from "../transitions/annotateWait.js";
import { annotateWaitsCalls, type BatchAnnotation } from "../transitions/annotateWaits.js";
import { cancelWaitCall, cancelWaitResult } from "../transitions/cancelWait.js";
import {
  claimRunPositionCall,
  claimRunPositionConflict,
  claimRunPositionTag,
} from "../transitions/claimRunPosition.js";
import { type ConsumeResult, consumeWaitCall, consumeWaitResult } from "../transitions/consumeWait.js";
import { deliverCandidatesCall, deliverCandidatesIds } from "../transitions/deliverCandidates.js";
import { deliverWaitsCall, deliverWaitsIds } from "../transitions/deliverWaits.js";
import { registerWaitCall, registerWaitResult } from "../transitions/registerWait.js";
import type { ScriptCall } from "../transitions/run.js";
import { checkHeartbeatMs, newToken } from "./tokens.js";

export interface DeliverRequest {
  eventType: string;
  correlationId?: string;
  payload?: Record<string, unknown>;
  all?: boolean;
  /** the resolutions' outcome @defaultValue "success" */
  outcome?: "success" | "failure";
  /** a failure's error object */
  error?: Record<string, unknown>;
}

/** A timeline entry a caller may append (the others are written by the transitions themselves). */
export type AnnotationWhat = Exclude<HistoryWhat, "registered" | "resolved" | "late_event" | "consumed">;

function toMs(isoTime: string | undefined): number | undefined {
  return isoTime === undefined ? undefined : Date.parse(isoTime);
}

/**
 * A wait's shape (docs/api.md, Wait shapes): its types (`eventType` alone, or
 * `eventTypes`), count and failure types; what of them enters the definition hash (the
 * set of types, count > 1, failure types: nothing for a plain wait, so its hash is
 * unchanged); `shaped` when the record needs the shape fields.
 */
export function waitShape(spec: WaitSpec): {
  types: string[];
  count: number;
  failureTypes: string[] | undefined;
  shaped: boolean;
  definition: Record<string, unknown>;
} {
  const types = spec.eventTypes ?? [spec.eventType as string];
  const count = spec.count ?? 1;
  const failureTypes = spec.failureTypes;
  const shaped = types.length > 1 || count > 1 || failureTypes !== undefined;
  const definition: Record<string, unknown> = {};
  if (types.length > 1) definition.eventTypes = [...types].sort();
  if (count > 1) definition.count = count;
  if (failureTypes !== undefined) definition.failureTypes = [...failureTypes].sort();
  return { types, count, failureTypes, shaped, definition };
}

function tenantPrefix(tenant: string | null): string {
  return tenant === null ? "" : encodeParts(tenant);
}

export class WaitsSystem {
  constructor(private readonly ctx: EngineContext) {}

  /**
   * Registers a wait (idempotent on (tenant, runId, position)). Two round trips:
   * claim the run position in the run key's partition, then create the wait in the
   * match key's partition, matching a buffered event at once. `trace`, the registration's
   * trace context, is kept in the new wait's record (not part of its definition).
   * @throws RendezvousError wait_conflict, invalid_request, payload_too_large (metadata over maxMetadataBytes)
   */
  async register(
    tenant: string,
    spec: WaitSpec,
    trace?: TraceCarrier,
  ): Promise<{ created: boolean; wait: Wait; token?: string }> {
    const { keys, config } = this.ctx;
    const deadlineMs = toMs(spec.deadline);
    const sinceMs = toMs(spec.since);
    if (spec.timeoutMs !== undefined && spec.timeoutMs > config.maxTimeoutMs) {
      throw new RendezvousError("invalid_request", "timeoutMs exceeds maxTimeoutMs", {
        issues: [{ path: ["timeoutMs"], message: `at most ${config.maxTimeoutMs}` }],
      });
    }
    if (deadlineMs !== undefined && deadlineMs - (this.ctx.now() ?? Date.now()) > config.maxTimeoutMs) {
      throw new RendezvousError("invalid_request", "deadline lies further ahead than maxTimeoutMs", {
        issues: [{ path: ["deadline"], message: `at most ${config.maxTimeoutMs} ms ahead` }],
      });
    }
    checkHeartbeatMs(spec.heartbeatMs, config.maxTimeoutMs);
    const metadata = spec.metadata === undefined ? undefined : JSON.stringify(spec.metadata);
    if (metadata !== undefined && Buffer.byteLength(metadata) > config.maxMetadataBytes) {
      throw new RendezvousError(
        "payload_too_large",
        `metadata exceeds maxMetadataBytes (${config.maxMetadataBytes} bytes)`,
        {
          maxMetadataBytes: config.maxMetadataBytes,
        },
      );
    }
    const shape = waitShape(spec);
    const eventType = shape.types[0] as string;
    let partition = keys.matchPartition(tenant, eventType, spec.correlationId);
    if (shape.types.length > 1 && keys.placement !== "correlation") {
      // a deployment created before any-of waits: its types' match keys lie in different partitions
      throw new RendezvousError(
        "invalid_request",
        "this deployment places waits by match key: one event type per wait",
        {
          issues: [
            {
              path: ["eventTypes"],
              message: "several event types need the placement by correlation id (docs/api.md, Wait shapes)",
            },
          ],
        },
      );
    }
    let waitId = keys.waitId(tenant, spec.runId, spec.position, partition);
    // (a plain wait's definition is hashed exactly as before shapes existed)
    const defHash = digest(
      canonicalJson({
        // (any-of: the set of types below, whatever their order)
        eventType: shape.types.length > 1 ? undefined : eventType,
        correlationId: spec.correlationId,
        timeoutMs: spec.timeoutMs,
        deadline: deadlineMs,
        since: sinceMs,
        ...shape.definition,
        heartbeatMs: spec.heartbeatMs,
      }),
      5,
    );
    const runPosition = keys.runPosition(tenant, spec.runId, spec.position);
    // the member stores the partition only (tagged): with the position digest it names the wait id
    const claim = await this.ctx.run(
      claimRunPositionCall(keys.partition(keys.runPartition(tenant, spec.runId)), {
        runPosition,
        wait: tagPartition(partition),
        defHash,
      }),
    );
    const claimedTag = claimRunPositionConflict(claim);
    if (claimedTag !== null) {
      throw new RendezvousError("wait_conflict", undefined, {
        waitId: keys.waitIdOfRunMember(`${runPosition}${claimedTag}`),
      });
    }
    // the run index names the wait: a run position claimed before lives where it was placed
    // then (the same partition, unless the placement of its match key changed since)
    const boundTag = claimRunPositionTag(claim);
    if (boundTag !== tagPartition(partition)) {
      partition = untagPartition(boundTag);
      waitId = keys.waitIdOfRunMember(`${runPosition}${boundTag}`);
    }
    const matchKeyOf = (t: string) => keys.matchKey(tenant, t, spec.correlationId);
    // a token asked for is made now; it is shown only if this call creates the wait
    const token = spec.token ? newToken(waitId) : undefined;
    const record = registrationRecord({
      matchKey: matchKeyOf(eventType),
      runId: spec.runId,
      position: spec.position,
      externalJobId: spec.externalJobId,
      metadata,
      ...(shape.shaped
        ? {
            otherMatchKeys: shape.types.length > 1 ? shape.types.slice(1).map(matchKeyOf) : undefined,
            indexKeys: shape.types.map((t) => keys.indexKey(tenant, t, spec.correlationId)),
            count: shape.count > 1 ? shape.count : undefined,
            failureMatchKeys: shape.failureTypes?.map(matchKeyOf),
          }
        : {}),
      tokenHash: token?.hash,
      heartbeatMs: spec.heartbeatMs,
      trace: traceText(trace),
    });
    const reply = await this.ctx.run(
      registerWaitCall(keys.partition(partition), {
        waitId,
        record,
        timeoutMs: spec.timeoutMs,
        deadlineMs,
        sinceMs,
        retentionMs: config.retentionMs,
        now: this.ctx.now(),
        indexKey: keys.indexKey(tenant, eventType, spec.correlationId),
      }),
    );
    const result = registerWaitResult(waitId, reply);
    if (result.created) {
      // a new waiting wait, or one a buffered event resolved at once (that event is no longer buffered)
      // (a shaped wait may take several buffered events: those it collected, or all of its resolution's)
      const taken = shape.shaped ? (result.wait.collected?.length ?? 0) : result.wait.state === "waiting" ? 0 : 1;
      const delta = {
        ...(result.wait.state === "waiting" ? { waiting: 1 } : {}),
        ...(taken > 0 ? { buffered: -taken } : {}),
      };
      await this.ctx.noteCounts(new Map([[tenant, delta]]));
    }
    return result.created && token ? { ...result, token: token.value } : result;
  }

  /** The raw record of a wait, whatever its tenant (internal). */
  private async rawWait(waitId: string): Promise<RawWait | null> {
    const { keys } = this.ctx;
    const p = keys.waitPartition(waitId);
    if (p === null) return null;
    const raw = await this.ctx.redis.hget(keys.partition(p).waits, waitId);
    return raw ? parseWaitRecord(raw) : null;
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
    const results = await this.ctx.perWaitRecord(waitIds, (pipeline, key, id) => pipeline.hget(key, id));
    return results.map(([err, raw], i) => {
      if (err) throw err;
      return raw ? waitOf(waitIds[i] as string, raw) : null;
    });
  }

  /**
   * Cancels a waiting wait; `trace`, the cancel's trace context, goes on its outbox entry.
   * @throws RendezvousError not_found, not_waiting
   */
  async cancel(tenant: string | null, waitId: string, trace?: TraceCarrier): Promise<Wait> {
    const reply = await this.ctx.run(
      cancelWaitCall(this.ctx.partitionOf(waitId), {
        waitId,
        tenantPrefix: tenantPrefix(tenant),
        retentionMs: this.ctx.config.retentionMs,
        now: this.ctx.now(),
        trace: traceText(trace),
      }),
    );
    const wait = cancelWaitResult(waitId, reply);
    await this.ctx.noteCounts(new Map([[wait.tenant, { waiting: -1 }]]));
    return wait;
  }

  /** Claims a settled wait's continuation; `first` is true for exactly one caller. */
  async consume(tenant: string | null, waitId: string, worker: string): Promise<ConsumeResult> {
    const reply = await this.ctx.run(
      consumeWaitCall(this.ctx.partitionOf(waitId), {
        waitId,
        tenantPrefix: tenantPrefix(tenant),
        worker,
        now: this.ctx.now(),
      }),
    );
    return consumeWaitResult(waitId, reply);
  }

  /** Sets the external job id (not part of the definition) and records job_attached. */
  async attachJob(tenant: string | null, waitId: string, externalJobId: string): Promise<Wait> {
    return this.annotate(tenant, waitId, "job_attached", { j: externalJobId });
  }

  /** Appends a timeline entry (dispatcher, sweeper, ingest). */
  async annotate(
    tenant: string | null,
    waitId: string,
    what: AnnotationWhat,
    detail: Record<string, unknown> = {},
    opts: { once?: boolean } = {},
  ): Promise<Wait> {
    const reply = await this.ctx.run(
      annotateWaitCall(this.ctx.partitionOf(waitId), {
        waitId,
        tenantPrefix: tenantPrefix(tenant),
        what,
        detail: JSON.stringify(detail),
        once: opts.once ?? false,
        now: this.ctx.now(),
      }),
    );
    return annotateWaitResult(waitId, reply);
  }

  /**
   * Appends timeline entries to several waits (any tenant; internal) in one round trip,
   * one script call per partition and kind (annotateWaits), with `after` in the same
   * pipeline (the dispatcher's XACK of the same partition).
   */
  async annotateMany(entries: Iterable<BatchAnnotation>, after: BatchCommand[] = []): Promise<void> {
    await this.ctx.runAll(this.annotateCalls(entries), after);
  }

  /** The calls annotateMany runs (one per partition and kind), for a caller that sends them in a script of its own. */
  annotateCalls(entries: Iterable<BatchAnnotation>): ScriptCall[] {
    return annotateWaitsCalls(this.ctx.keys, entries, this.ctx.now());
  }

  /**
   * Resolves waiting waits of the tenant directly (docs/api.md, Direct delivery).
   * Without a correlation id every partition is asked (one pipelined round trip);
   * more than one candidate without `all` is refused and nothing is resolved.
   * @throws RendezvousError ambiguous
   */
  async deliver(
    tenant: string,
    req: DeliverRequest,
    trace?: TraceCarrier,
  ): Promise<{ delivered: string[]; matched: number }> {
    const { keys, config } = this.ctx;
    const now = this.ctx.now();
    const partitions =
      req.correlationId === undefined
        ? keys.allPartitions()
        : [keys.matchPartition(tenant, req.eventType, req.correlationId)];
    const matchKeyPrefix =
      req.correlationId === undefined
        ? encodeParts(tenant, req.eventType)
        : encodeParts(tenant, req.eventType, req.correlationId);
    const indexPrefix = keys.indexKey(tenant, req.eventType, req.correlationId);
    const found = await this.ctx.runAll(
      partitions.map((p) =>
        deliverCandidatesCall(keys.partition(p), {
          indexPrefix,
          legacyIndexPrefix: keys.legacyIndex ? keys.legacyIndexKey(tenant, indexPrefix) : "",
          matchKeyPrefix,
          idPrefix: waitIdPrefix(p),
          limit: config.fanoutCap,
          now,
        }),
      ),
    );
    const byPartition = found.map((reply, i) => ({ p: partitions[i] as number, ids: deliverCandidatesIds(reply) }));
    const candidates = byPartition.flatMap((x) => x.ids);
    if (candidates.length > 1 && !req.all) {
      throw new RendezvousError("ambiguous", undefined, { candidates });
    }
    const resolved = await this.ctx.runAll(
      byPartition
        .filter((x) => x.ids.length > 0)
        .map((x) =>
          deliverWaitsCall(keys.partition(x.p), {
            tenantPrefix: encodeParts(tenant),
            payload: req.payload === undefined ? undefined : JSON.stringify(req.payload),
            outcome: req.outcome,
            error: req.error === undefined ? undefined : JSON.stringify(req.error),
            retentionMs: config.retentionMs,
            waitIds: x.ids,
            now,
            trace: traceText(trace),
          }),
        ),
    );
    const delivered = resolved.flatMap(deliverWaitsIds);
    await this.ctx.noteCounts(new Map(delivered.length > 0 ? [[tenant, { waiting: -delivered.length }]] : []));
    return { delivered, matched: candidates.length };
  }
}
