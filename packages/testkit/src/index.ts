export { freePort, type RedisServer, type RedisServerOptions, startRedisServer } from "@rendezvous/engine";
export {
  type ClusterNode,
  keySlot,
  type RedisCluster,
  type RedisClusterOptions,
  startRedisCluster,
} from "./cluster.js";
export { guardClosed, redisUrl, trackOpen, uniquePrefix } from "./fixtures.js";
export { type CliProcess, spawnCli } from "./processes.js";
export { mulberry32, seedFromEnv } from "./random.js";
export { makeResources } from "./resources.js";
export { eventually } from "./wait.js";
