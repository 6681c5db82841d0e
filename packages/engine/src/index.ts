export { type BatchCommand, type BatchReply, execBatch, hashTag } from "./batch.js";
export {
  Config,
  type ConfigInput,
  EventTypeConfig,
  loadConfigFile,
  ProducerConfig,
  parseConfig,
  QuotasConfig,
  retentionFor,
  TenantConfig,
  type TenantQuotas,
} from "./config.js";
export {
  COMPACT_CHUNK,
  COMPACT_SKEW_MS,
  type CompactionOptions,
  type CompactionResult,
  compactContinuations,
  compactionCursorKey,
} from "./continuations.js";
export { canonicalJson, decodeParts, digest, encodeParts, fnv1a32, splitEncodings } from "./encoding.js";
export { FAILPOINTS, type FailpointName, failpoint, failpointArmed, parseFailpoints } from "./failpoints.js";
export { type ConsumerGroupInfo, findGroup } from "./formats/consumer-groups.js";
export { toEventRecord } from "./formats/event-record.js";
export { type InboxMember, parseInboxMember } from "./formats/inbox-members.js";
export {
  parseRunMember,
  parseWaitId,
  WAIT_BODY_LENGTH,
  waitIdOf,
  waitIdOfIndexMember,
  waitIdOfRunMember,
  waitIdPrefix,
} from "./formats/index-members.js";
export { iso } from "./formats/iso.js";
export {
  type CredentialRecord,
  type EventTypeRecord,
  type HostKeyRecord,
  Limits,
  type ProducerRecord,
  type RegistryRecords,
  type TenantRecord,
} from "./formats/registry-records.js";
export {
  type EventEntry,
  eventsOfEntry,
  type ResolutionEntry,
  resolutionOfEntry,
  type StreamEntry,
  type StreamEvent,
} from "./formats/stream-entries.js";
export {
  bullmqTelemetryMetadata,
  MAX_TRACESTATE_CHARS,
  type TraceCarrier,
  traceCarrierOf,
  traceOfBullmqMetadata,
  traceOfText,
  traceText,
} from "./formats/trace-context.js";
export { toWait } from "./formats/wait-record.js";
export { luaScripts, type ScriptName } from "./generated/lua.js";
export { explainWait } from "./inspect.js";
export {
  DISPATCHER_GROUP,
  KeyLayout,
  MATCHER_GROUP,
  type PartitionKeys,
  type Placement,
  parkedSlotKey,
} from "./keys.js";
export { ListGate, ListLease } from "./list-gate.js";
export { createLogger, type Logger, REDACT_PATHS } from "./logger.js";
export { createMetrics, type Metrics, UNKNOWN_TENANT } from "./metrics.js";
export { MAX_REST_MS, Pacer } from "./pacer.js";
export {
  type CountDelta,
  type CountDrift,
  type CountQuota,
  type LimitsSource,
  type QuotaRefusal,
  type QuotaRequest,
  Quotas,
  quotaError,
  type RateQuota,
} from "./quotas.js";
export type { PartitionBacklog } from "./reads/backlog.js";
export { listWaitsOfTenants, type RecentRejection, type TenantWaitCounts } from "./reads/console-reads.js";
export type { DeadlineScan, ScanOptions } from "./reads/deadlines.js";
export { listWaits, type WaitFilter, type WaitPage } from "./reads/list-waits.js";
export { ensurePartitionCount } from "./reads/meta.js";
export { PartitionReader } from "./reads/partition-reader.js";
export type { TenantUsage } from "./reads/quota-counts.js";
export type { ReaderSource } from "./reads/source.js";
export {
  COMMAND_TIMED_OUT,
  createBlockingRedis,
  createRedis,
  DEFAULT_COMMAND_TIMEOUT_MS,
  isCluster,
  isClusterUrl,
  isCommandTimeout,
  parseRedisUrl,
  type RedisConnectionOptions,
  type RedisLike,
  type RedisTarget,
  withinCommandTimeout,
} from "./redis.js";
export {
  freePort,
  isPortFree,
  type RedisServer,
  RedisServerMissing,
  type RedisServerOptions,
  startRedisServer,
} from "./redis-server.js";
export {
  type AuditEntry,
  checkSecretKey,
  configOfView,
  Directory,
  describeChange,
  type EventTypeView,
  type HostKeyView,
  type KeyView,
  keyHash,
  type OpenRegistryOptions,
  openRegistry,
  type PlannedChange,
  type ProducerInput,
  type ProducerPatch,
  type ProducerView,
  planSeed,
  RegistryAdmin,
  type RegistryKeys,
  type RegistrySnapshot,
  RegistryStore,
  type RegistryView,
  RegistryWatch,
  registryKeys,
  resolveSecretKey,
  SecretKey,
  type SecretKeySource,
  type SecretView,
  type SeedMode,
  type TenantInput,
  type TenantPatch,
  type TenantView,
  type ViewChange,
  type ViewListener,
  viewOfConfig,
  viewOfRecords,
} from "./registry/index.js";
export { createResources, queuePrefixFor, type ResourceOptions, type Resources } from "./resources.js";
export {
  type AcceptMatcher,
  type ConsumeResult,
  type DeliverRequest,
  type Handoff,
  type IngestInput,
  type IngestResult,
  type MatchResult,
  REJECTIONS_KEPT,
  type Rejection,
  Store,
  type StoreConfig,
  type StoreOptions,
  type TimeoutResult,
} from "./store.js";
export {
  ConsumerLoop,
  type ConsumerLoopOptions,
  EVENT_FEED,
  type Feed,
  RESOLUTION_FEED,
} from "./streams/consumer-loop.js";
export { createSubscriber, type NodeAddress, NodeSubscriber, type Subscriber } from "./subscriber.js";
export {
  NO_TRACING,
  type SpanKindName,
  startTracing,
  type TraceSpan,
  type TraceSpanOptions,
  type Tracing,
  tracesUrl,
  tracingWanted,
} from "./tracing.js";
export type { BatchAnnotation } from "./transitions/annotateWaits.js";
export type { AcceptJobs } from "./transitions/ingestEvents.js";
export { Code, type CodeName, type CodeValue } from "./transitions/replies.js";
export { type ArgValue, foreignScript, prefixedScript, type ScriptCall } from "./transitions/run.js";
export { LuaScript } from "./transitions/script-command.js";
