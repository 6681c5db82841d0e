export { type BatchCommand, type BatchReply, execBatch, hashTag } from "./batch.js";
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
export { canonicalJson, decodeParts, digest, encodeParts, fnv1a32, splitEncodings } from "./encoding.js";
export { FAILPOINTS, type FailpointName, failpoint, parseFailpoints } from "./failpoints.js";
export { luaScripts, type ScriptName } from "./generated/lua.js";
export {
  ensurePartitionCount,
  explainWait,
  listWaits,
  nearMisses,
  type PartitionBacklog,
  partitionBacklog,
  storedPartitionCount,
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
export { Code, type CodeName, type CodeValue } from "./transitions/replies.js";
export { defineScripts } from "./transitions/run.js";
