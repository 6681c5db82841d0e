import { type ConfigInput, createResources, parseConfig, type Resources } from "@rendezvous/engine";
import { pino } from "pino";
import { redisUrl, trackOpen, uniquePrefix } from "./fixtures.js";

/** Resources on the run's private Redis (or cluster) with a unique prefix, closed after the test. */
export function makeResources(config: Partial<ConfigInput> = {}): Resources {
  const res = createResources({
    redisUrl: redisUrl(),
    prefix: uniquePrefix(),
    config: parseConfig({ partitions: 4, claimIdleMs: 300, ...config }),
    logger: pino({ level: process.env.LOG_LEVEL ?? "silent" }),
  });
  trackOpen({ quit: () => res.close() });
  return res;
}
