import { type ConfigInput, createResources, parseConfig, type Resources } from "@rendezvous/core";
import { redisUrl, trackOpen, uniquePrefix } from "@rendezvous/testkit";
import { pino } from "pino";

/** Resources on the run's private Redis with a unique prefix, closed after the test. */
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

/** Polls until `check` returns a truthy value (or fails after `ms`). */
export async function eventually<T>(check: () => Promise<T | undefined | null | false>, ms = 5000): Promise<T> {
  const until = Date.now() + ms;
  for (;;) {
    const v = await check();
    if (v) return v;
    if (Date.now() > until) throw new Error("condition not met in time");
    await new Promise((r) => setTimeout(r, 20));
  }
}
