/**
 * Pipelines that are safe on a Redis Cluster. A pipeline over several partitions
 * touches several slots, which a cluster refuses (or, spread over nodes, cannot
 * retry as one). `execBatch` keeps ONE pipeline — one round trip — on a single
 * Redis, and on a cluster splits the commands by hash tag (one tag = one slot, so
 * one partition) and runs the groups concurrently: still about one round trip,
 * each group retried on its own through MOVED/failover. Replies come back in the
 * order the commands were given.
 */
import type { ChainableCommander } from "ioredis";
import { coalesceWrites, isCluster, type RedisLike } from "./redis.js";

/** One command of a batch: the key that places it and how to queue it on a pipeline. */
export interface BatchCommand {
  /** a key of the command (its hash tag picks the slot); null = no key (goes with any group) */
  key: string | null;
  add(pipeline: ChainableCommander): unknown;
}

/** The reply of each command, in order: an error or a value. */
export type BatchReply = [Error | null, unknown];

/**
 * The part of a key that decides its cluster slot: the content of the first
 * `{…}` when non-empty, else the whole key (Redis Cluster spec).
 */
export function hashTag(key: string): string {
  const open = key.indexOf("{");
  if (open < 0) return key;
  const close = key.indexOf("}", open + 1);
  return close > open + 1 ? key.slice(open + 1, close) : key;
}

async function run(redis: RedisLike, commands: BatchCommand[]): Promise<BatchReply[]> {
  const pipeline = redis.pipeline();
  for (const c of commands) c.add(pipeline);
  return ((await pipeline.exec()) ?? []) as BatchReply[];
}

/** Runs commands in one pipeline (single Redis) or one pipeline per slot, concurrently (cluster). */
export async function execBatch(redis: RedisLike, commands: BatchCommand[]): Promise<BatchReply[]> {
  if (commands.length === 0) return [];
  if (!isCluster(redis)) {
    coalesceWrites(redis);
    return run(redis, commands);
  }
  const groups = new Map<string, number[]>();
  const keyless: number[] = [];
  commands.forEach((c, i) => {
    if (c.key === null) {
      keyless.push(i);
      return;
    }
    const tag = hashTag(c.key);
    const group = groups.get(tag);
    if (group) group.push(i);
    else groups.set(tag, [i]);
  });
  const lists = [...groups.values()];
  if (keyless.length > 0) {
    if (lists.length > 0) (lists[0] as number[]).unshift(...keyless);
    else lists.push(keyless);
  }
  const out: BatchReply[] = new Array(commands.length);
  await Promise.all(
    lists.map(async (indexes) => {
      const replies = await run(
        redis,
        indexes.map((i) => commands[i] as BatchCommand),
      );
      indexes.forEach((i, j) => {
        out[i] = replies[j] ?? [new Error("no reply"), null];
      });
    }),
  );
  return out;
}
