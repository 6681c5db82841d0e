/**
 * Waits: registration, reads of wait records, and the transitions a caller asks of one
 * wait (cancel, consume, annotate) or of the waits of a match key (direct delivery).
 */

import { type HistoryWhat, RendezvousError, type Wait, type WaitSpec } from "@rendezvous/protocol";
import type { BatchCommand } from "../batch.js";
import { canonicalJson, digest, encodeParts } from "../encoding.js";
import type { EngineContext } from "../engine-context.js";
import { tagPartition, waitIdPrefix } from "../formats/index-members.js";
import { parseWaitRecord, type RawWait, registrationRecord, toWait, waitOf } from "../formats/wait-record.js";
import { annotateWaitCall, annotateWaitResult } from "../transitions/annotateWait.js";
import { cancelWaitCall, cancelWaitResult } from "../transitions/cancelWait.js";
import { claimRunPositionCall, claimRunPositionConflict } from "../transitions/claimRunPosition.js";
import { type ConsumeResult, consumeWaitCall, consumeWaitResult } from "../transitions/consumeWait.js";
import { deliverCandidatesCall, deliverCandidatesIds } from "../transitions/deliverCandidates.js";
import { deliverWaitsCall, deliverWaitsIds } from "../transitions/deliverWaits.js";
import { registerWaitCall, registerWaitResult } from "../transitions/registerWait.js";
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

function tenantPrefix(tenant: string | null): string {
  return tenant === null ? "" : encodeParts(tenant);
}

export class WaitsSystem {
  constructor(private readonly ctx: EngineContext) {}

  /**
   * Registers a wait (idempotent on (tenant, runId, position)). Two round trips:
   * claim the run position in the run key's partition, then create the wait in the
   * match key's partition, matching a buffered event at once.
   * @throws RendezvousError wait_conflict, invalid_request, payload_too_large (metadata over maxMetadataBytes)
   */
  async register(tenant: string, spec: WaitSpec): Promise<{ created: boolean; wait: Wait; token?: string }> {
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
    const partition = keys.matchPartition(tenant, spec.eventType, spec.correlationId);
    const waitId = keys.waitId(tenant, spec.runId, spec.position, partition);
    const defHash = digest(
      canonicalJson({
        eventType: spec.eventType,
        correlationId: spec.correlationId,
        timeoutMs: spec.timeoutMs,
        deadline: deadlineMs,
        since: sinceMs,
        heartbeatMs: spec.heartbeatMs,
      }),
      5,
    );
    const runPosition = keys.runPosition(tenant, spec.runId, spec.position);
    // the member stores the partition only (tagged): with the position digest it names the wait id
    const claimedTag = claimRunPositionConflict(
      await this.ctx.run(
        claimRunPositionCall(keys.partition(keys.runPartition(tenant, spec.runId)), {
          runPosition,
          wait: tagPartition(partition),
          defHash,
        }),
      ),
    );
    if (claimedTag !== null) {
      throw new RendezvousError("wait_conflict", undefined, {
        waitId: keys.waitIdOfRunMember(`${runPosition}${claimedTag}`),
      });
    }
    // a token asked for is made now; it is shown only if this call creates the wait
    const token = spec.token ? newToken(waitId) : undefined;
    const record = registrationRecord({
      matchKey: keys.matchKey(tenant, spec.eventType, spec.correlationId),
      runId: spec.runId,
      position: spec.position,
      externalJobId: spec.externalJobId,
      metadata,
      tokenHash: token?.hash,
      heartbeatMs: spec.heartbeatMs,
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
        indexKey: keys.indexKey(tenant, spec.eventType, spec.correlationId),
      }),
    );
    const result = registerWaitResult(waitId, reply);
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

  /** Cancels a waiting wait. @throws RendezvousError not_found, not_waiting */
  async cancel(tenant: string | null, waitId: string): Promise<Wait> {
    const reply = await this.ctx.run(
      cancelWaitCall(this.ctx.partitionOf(waitId), {
        waitId,
        tenantPrefix: tenantPrefix(tenant),
        retentionMs: this.ctx.config.retentionMs,
        now: this.ctx.now(),
      }),
    );
    return cancelWaitResult(waitId, reply);
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
   * with `after` in the same pipeline (the dispatcher's XACK of the same partition).
   */
  async annotateMany(
    entries: Array<{
      waitId: string;
      what: "continuation_dispatched" | "sweeper_rescheduled";
      detail: Record<string, unknown>;
      /** skip when the timeline already has this entry (same kind and detail) */
      once?: boolean;
    }>,
    after: BatchCommand[] = [],
  ): Promise<void> {
    const { keys } = this.ctx;
    const now = this.ctx.now();
    await this.ctx.runAll(
      entries.flatMap(({ waitId, what, detail, once }) => {
        const p = keys.waitPartition(waitId);
        if (p === null) return [];
        return [
          annotateWaitCall(keys.partition(p), {
            waitId,
            tenantPrefix: "",
            what,
            detail: JSON.stringify(detail),
            once: once ?? false,
            now,
          }),
        ];
      }),
      after,
    );
  }

  /**
   * Resolves waiting waits of the tenant directly (docs/api.md, Direct delivery).
   * Without a correlation id every partition is asked (one pipelined round trip);
   * more than one candidate without `all` is refused and nothing is resolved.
   * @throws RendezvousError ambiguous
   */
  async deliver(tenant: string, req: DeliverRequest): Promise<{ delivered: string[]; matched: number }> {
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
          }),
        ),
    );
    return { delivered: resolved.flatMap(deliverWaitsIds), matched: candidates.length };
  }
}
