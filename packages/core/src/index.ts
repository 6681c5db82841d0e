export {
  BatchResult,
  BatchResults,
  ERROR_STATUSES,
  ErrorBody,
  type ErrorStatus,
  EventBatch,
  EventResponse,
  errorResponses,
  Issue,
  PublishResult,
  WaitResponse,
} from "./api-schemas.js";
export { type BatchCommand, type BatchReply, execBatch, hashTag } from "./batch.js";
export { Code, type CodeName, type CodeValue } from "./codes.js";
export {
  Config,
  type ConfigInput,
  EventTypeConfig,
  loadConfigFile,
  ProducerConfig,
  parseConfig,
  retentionFor,
  TenantConfig,
} from "./config.js";
export {
  countWaits,
  listWaitsOfTenants,
  overdueWaits,
  type RecentRejection,
  recentRejections,
  type TenantWaitCounts,
} from "./console-reads.js";
export {
  ContinuationGroupConfig,
  ContinuationGroupName,
  ContinuationGroups,
  continuationGroupOf,
  continuationQueueName,
  continuationQueueOf,
  continuationQueues,
} from "./continuation-groups.js";
export { canonicalJson, decodeParts, digest, encodeParts, fnv1a32, splitEncodings } from "./encoding.js";
export { type ErrorCode, errorCatalogue, isRendezvousError, RendezvousError } from "./errors.js";
export { FAILPOINTS, type FailpointName, failpoint, parseFailpoints } from "./failpoints.js";
export { luaScripts, type ScriptName } from "./generated/lua.js";
export {
  type Explanation,
  ensurePartitionCount,
  explainWait,
  listWaits,
  type NearMiss,
  nearMisses,
  type PartitionBacklog,
  partitionBacklog,
  storedPartitionCount,
  type Verdict,
  type WaitFilter,
  type WaitPage,
} from "./inspect.js";
export { DISPATCHER_GROUP, KeyLayout, MATCHER_GROUP, type PartitionKeys } from "./keys.js";
export { ListGate, ListLease } from "./list-gate.js";
export { createLogger, type Logger, REDACT_PATHS } from "./logger.js";
export { createMetrics, type Metrics } from "./metrics.js";
export { MAX_REST_MS, Pacer } from "./pacer.js";
export { iso, toEventRecord, toWait } from "./records.js";
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
export { createResources, queuePrefixFor, type ResourceOptions, type Resources } from "./resources.js";
export {
  Consumption,
  CorrelationId,
  EventId,
  EventInput,
  EventRecord,
  EventRef,
  EventStatus,
  EventType,
  findInJson,
  HistoryEntry,
  HistoryWhat,
  InputObject,
  isWellFormed,
  LONE_SURROGATE,
  Name,
  NUMBER_OUT_OF_RANGE,
  Resolution,
  ResolutionKind,
  Text,
  toWellFormed,
  type Unstorable,
  unstorable,
  Wait,
  WaitSpec,
  WaitState,
} from "./schemas.js";
export { defineScripts } from "./scripts.js";
export {
  type ConsumeResult,
  type DeliverRequest,
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
export { EventTypePattern, typeMatcher } from "./type-patterns.js";
