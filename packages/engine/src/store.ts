import { EngineContext, type StoreConfig } from "./engine-context.js";
import { KeyLayout } from "./keys.js";
import type { Quotas } from "./quotas.js";
import type { RedisLike } from "./redis.js";
import { type AcceptMatcher, IngestSystem } from "./systems/ingest.js";
import { RejectionsSystem } from "./systems/rejections.js";
import { ResolutionSystem } from "./systems/resolution.js";
import { TokensSystem } from "./systems/tokens.js";
import { WaitsSystem } from "./systems/waits.js";

export type { StoreConfig } from "./engine-context.js";
export type { Rejection } from "./formats/rejection-record.js";
export type { AcceptMatcher, IngestInput, IngestResult } from "./systems/ingest.js";
export { REJECTIONS_KEPT } from "./systems/rejections.js";
export type { TokenCompletion } from "./systems/tokens.js";
export type { DeliverRequest } from "./systems/waits.js";
export type { ConsumeResult } from "./transitions/consumeWait.js";
export type { Handoff, MatchResult } from "./transitions/matchEvent.js";
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
  /** the quotas whose limits this Store's follow (withConnection), else its own from `config` */
  quotasOf?: Quotas;
}

export class Store {
  readonly keys: KeyLayout;
  readonly redis: RedisLike;
  readonly config: StoreConfig;
  /** the tenants' quotas, counts and rate limiters (quotas.ts) */
  readonly quotas: Quotas;
  readonly #ctx: EngineContext;

  constructor(opts: StoreOptions) {
    this.redis = opts.redis;
    this.config = opts.config;
    this.keys = new KeyLayout(opts.prefix ?? "rdv", opts.config.partitions);
    this.#ctx = new EngineContext(this.redis, this.keys, this.config, opts.clock ?? (() => undefined), opts.quotasOf);
    const ctx = this.#ctx;
    this.quotas = ctx.quotas;
    const ingest = new IngestSystem(ctx);
    const waits = new WaitsSystem(ctx);
    const resolution = new ResolutionSystem(ctx);
    const tokens = new TokensSystem(ctx);
    this.ingest = ingest.ingest.bind(ingest);
    this.acceptWith = (matcher) => {
      ingest.matcher = matcher;
    };
    this.getEvent = ingest.getEvent.bind(ingest);
    const rejections = new RejectionsSystem(ctx);
    this.recordRejections = rejections.recordRejections.bind(rejections);
    this.rejections = rejections.rejections.bind(rejections);
    this.register = waits.register.bind(waits);
    this.getWait = waits.getWait.bind(waits);
    this.getWaits = waits.getWaits.bind(waits);
    this.cancel = waits.cancel.bind(waits);
    this.consume = waits.consume.bind(waits);
    this.attachJob = waits.attachJob.bind(waits);
    this.annotate = waits.annotate.bind(waits);
    this.annotateMany = waits.annotateMany.bind(waits);
    this.annotateCalls = waits.annotateCalls.bind(waits);
    this.deliver = waits.deliver.bind(waits);
    this.perWaitRecord = ctx.perWaitRecord.bind(ctx);
    this.match = resolution.match.bind(resolution);
    this.timeout = resolution.timeout.bind(resolution);
    this.timeoutMany = resolution.timeoutMany.bind(resolution);
    this.expire = resolution.expire.bind(resolution);
    this.expireMany = resolution.expireMany.bind(resolution);
    this.promoteMany = resolution.promoteMany.bind(resolution);
    this.completeByToken = tokens.completeByToken.bind(tokens);
    this.heartbeatByToken = tokens.heartbeatByToken.bind(tokens);
    this.heartbeat = tokens.heartbeat.bind(tokens);
    this.rotateToken = tokens.rotateToken.bind(tokens);
    this.tokenWaitId = tokens.tokenWaitId.bind(tokens);
  }

  /**
   * The same Store (keys, config, clock) on another connection. Commands of one
   * connection are answered in order, so a worker that sends long pipelines (the
   * scheduler's timeouts) uses a connection of its own: the API's commands are not
   * queued behind them.
   */
  withConnection(redis: RedisLike): Store {
    const store = new Store({
      redis,
      config: this.config,
      prefix: this.keys.prefix,
      clock: this.#ctx.clock,
      // (the limits in force are this Store's: the registry it follows, the file's tenant quotas)
      quotasOf: this.quotas,
    });
    // (the deployment's placement and index layout, as read from its meta: reads/meta.ts)
    store.keys.usePlacement(this.keys.placement);
    store.keys.legacyIndex = this.keys.legacyIndex;
    return store;
  }

  // Each operation is its system's own method (same signature), bound here (plain
  // properties, like methods: a test may replace one).

  /** systems/ingest.ts */
  ingest: IngestSystem["ingest"];
  /**
   * Leaves the match of what ingest appends to this process's matcher, in the same
   * script (acceptEvents), or no longer (undefined): `rendezvous start` (server/roles.ts).
   */
  acceptWith: (matcher: AcceptMatcher | undefined) => void;
  getEvent: IngestSystem["getEvent"];
  /** systems/rejections.ts */
  recordRejections: RejectionsSystem["recordRejections"];
  rejections: RejectionsSystem["rejections"];

  /** systems/waits.ts */
  register: WaitsSystem["register"];
  getWait: WaitsSystem["getWait"];
  getWaits: WaitsSystem["getWaits"];
  cancel: WaitsSystem["cancel"];
  consume: WaitsSystem["consume"];
  attachJob: WaitsSystem["attachJob"];
  annotate: WaitsSystem["annotate"];
  annotateMany: WaitsSystem["annotateMany"];
  annotateCalls: WaitsSystem["annotateCalls"];
  deliver: WaitsSystem["deliver"];
  /** One command per wait id on its record, in one round trip (engine-context.ts). */
  perWaitRecord: EngineContext["perWaitRecord"];

  /** systems/resolution.ts */
  match: ResolutionSystem["match"];
  timeout: ResolutionSystem["timeout"];
  timeoutMany: ResolutionSystem["timeoutMany"];
  expire: ResolutionSystem["expire"];
  expireMany: ResolutionSystem["expireMany"];
  promoteMany: ResolutionSystem["promoteMany"];

  /** systems/tokens.ts */
  completeByToken: TokensSystem["completeByToken"];
  heartbeatByToken: TokensSystem["heartbeatByToken"];
  heartbeat: TokensSystem["heartbeat"];
  rotateToken: TokensSystem["rotateToken"];
  tokenWaitId: TokensSystem["tokenWaitId"];
}
