/**
 * vitest global setup: one private redis-server for the whole run. Tests isolate
 * themselves by a unique key prefix (see `useRedis`).
 */

import { type RedisServer, startRedisServer } from "@rendezvous/engine";
import type { TestProject } from "vitest/node";
import type {} from "./fixtures.js";

let server: RedisServer | undefined;

export async function setup(project: TestProject): Promise<void> {
  server = await startRedisServer();
  project.provide("redisUrl", server.url);
}

export async function teardown(): Promise<void> {
  await server?.stop();
}
