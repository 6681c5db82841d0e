export { freePort, type RedisServer, type RedisServerOptions, startRedisServer } from "@rendezvous/core";
export { guardClosed, redisUrl, trackOpen, uniquePrefix } from "./fixtures.js";
export { type CliProcess, spawnCli } from "./processes.js";
export { mulberry32, seedFromEnv } from "./random.js";
