/**
 * vitest global setup of the `cluster` project: one local 3-master Redis Cluster for
 * the whole run, provided as `redisUrl` (`redis+cluster://…`), so the same test
 * files run their scenarios against the cluster unchanged. Tests isolate themselves
 * by a unique key prefix, as on the single Redis.
 */
import type { TestProject } from "vitest/node";
import { type RedisCluster, startRedisCluster } from "./cluster.js";
import type {} from "./fixtures.js";

let cluster: RedisCluster | undefined;

export async function setup(project: TestProject): Promise<void> {
  cluster = await startRedisCluster({ masters: 3 });
  project.provide("redisUrl", cluster.url);
}

export async function teardown(): Promise<void> {
  await cluster?.stop();
}
