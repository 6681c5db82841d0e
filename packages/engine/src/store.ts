/**
 * The typed Store, the front door of the engine: every state change of rendezvous is
 * one Lua transition over one partition (src/transitions: each one's arguments and
 * reply), run by the systems over one shared context (src/systems: ingest, waits,
 * resolution). The Store never reads, changes and writes wait state itself.
 */

import type { EventRecord, Wait, WaitSpec } from "@rendezvous/protocol";
import type { ChainableCommander } from "ioredis";
import type { BatchReply } from "./batch.js";
import { EngineContext, type StoreConfig } from "./engine-context.js";
import type { Rejection } from "./formats/rejection-record.js";
import { KeyLayout } from "./keys.js";
import type { RedisLike } from "./redis.js";
import { type IngestInput, type IngestResult, IngestSystem } from "./systems/ingest.js";
import { ResolutionSystem } from "./systems/resolution.js";
import { type AnnotationWhat, type DeliverRequest, WaitsSystem } from "./systems/waits.js";
import type { ConsumeResult } from "./transitions/consumeWait.js";
import type { MatchResult } from "./transitions/matchEvent.js";
import { defineScripts } from "./transitions/run.js";
import type { TimeoutResult } from "./transitions/timeoutWait.js";

export type { StoreConfig } from "./engine-context.js";
export type { Rejection } from "./formats/rejection-record.js";
export { type IngestInput, type IngestResult, REJECTIONS_KEPT } from "./systems/ingest.js";
export type { DeliverRequest } from "./systems/waits.js";
export type { ConsumeResult } from "./transitions/consumeWait.js";
export type { MatchResult } from "./transitions/matchEvent.js";
export type { TimeoutResult } from "./transitions/timeoutWait.js";

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

type Refusal = Parameters<IngestSystem["recordRejections"]>[1][number];
type Annotation = Parameters<WaitsSystem["annotateMany"]>[0][number];

export class Store {
  readonly keys: KeyLayout;
  readonly redis: RedisLike;
  readonly config: StoreConfig;
  readonly #ctx: EngineContext;
  readonly #ingest: IngestSystem;
  readonly #waits: WaitsSystem;
  readonly #resolution: ResolutionSystem;

  constructor(opts: StoreOptions) {
    this.redis = opts.redis;
    this.config = opts.config;
    this.keys = new KeyLayout(opts.prefix ?? "rdv", opts.config.partitions);
    this.#ctx = new EngineContext(this.redis, this.keys, this.config, opts.clock ?? (() => undefined));
    this.#ingest = new IngestSystem(this.#ctx);
    this.#waits = new WaitsSystem(this.#ctx);
    this.#resolution = new ResolutionSystem(this.#ctx);
    defineScripts(this.redis);
  }

  /**
   * The same Store (keys, config, clock) on another connection. Commands of one
   * connection are answered in order, so a worker that sends long pipelines (the
   * scheduler's timeouts) uses a connection of its own: the API's commands are not
   * queued behind them.
   */
  withConnection(redis: RedisLike): Store {
    return new Store({ redis, config: this.config, prefix: this.keys.prefix, clock: this.#ctx.clock });
  }

  // ---------------------------------------------------------------- ingest (systems/ingest.ts)

  ingest(tenant: string, producer: string, events: IngestInput[]): Promise<IngestResult[]> {
    return this.#ingest.ingest(tenant, producer, events);
  }

  getEvent(tenant: string, producer: string, eventId: string): Promise<EventRecord | null> {
    return this.#ingest.getEvent(tenant, producer, eventId);
  }

  recordRejections(tenant: string, refusals: Refusal[]): Promise<void> {
    return this.#ingest.recordRejections(tenant, refusals);
  }

  rejections(tenant: string, eventType: string, correlationId: string): Promise<Rejection[]> {
    return this.#ingest.rejections(tenant, eventType, correlationId);
  }

  // ---------------------------------------------------------------- waits (systems/waits.ts)

  register(tenant: string, spec: WaitSpec): Promise<{ created: boolean; wait: Wait }> {
    return this.#waits.register(tenant, spec);
  }

  getWait(tenant: string | null, waitId: string): Promise<Wait | null> {
    return this.#waits.getWait(tenant, waitId);
  }

  getWaits(waitIds: string[]): Promise<Array<Wait | null>> {
    return this.#waits.getWaits(waitIds);
  }

  perWaitRecord(
    waitIds: string[],
    command: (pipeline: ChainableCommander, key: string, id: string) => unknown,
  ): Promise<BatchReply[]> {
    return this.#ctx.perWaitRecord(waitIds, command);
  }

  cancel(tenant: string | null, waitId: string): Promise<Wait> {
    return this.#waits.cancel(tenant, waitId);
  }

  consume(tenant: string | null, waitId: string, worker: string): Promise<ConsumeResult> {
    return this.#waits.consume(tenant, waitId, worker);
  }

  attachJob(tenant: string | null, waitId: string, externalJobId: string): Promise<Wait> {
    return this.#waits.attachJob(tenant, waitId, externalJobId);
  }

  annotate(
    tenant: string | null,
    waitId: string,
    what: AnnotationWhat,
    detail: Record<string, unknown> = {},
    opts: { once?: boolean } = {},
  ): Promise<Wait> {
    return this.#waits.annotate(tenant, waitId, what, detail, opts);
  }

  annotateMany(entries: Annotation[]): Promise<void> {
    return this.#waits.annotateMany(entries);
  }

  deliver(tenant: string, req: DeliverRequest): Promise<{ delivered: string[]; matched: number }> {
    return this.#waits.deliver(tenant, req);
  }

  // ---------------------------------------------------------------- workers (systems/resolution.ts)

  match(partition: number, entries: Array<{ streamId: string; eventKey: string }>): Promise<MatchResult[]> {
    return this.#resolution.match(partition, entries);
  }

  timeout(waitId: string): Promise<TimeoutResult> {
    return this.#resolution.timeout(waitId);
  }

  timeoutMany(waitIds: string[]): Promise<TimeoutResult[]> {
    return this.#resolution.timeoutMany(waitIds);
  }

  expire(partition: number, limit = 200): Promise<{ handled: number; more: boolean }> {
    return this.#resolution.expire(partition, limit);
  }

  expireMany(partitions: number[], limit = 200): Promise<Array<{ handled: number; more: boolean }>> {
    return this.#resolution.expireMany(partitions, limit);
  }
}
