/**
 * What the systems of the Store share: the connection, the key layout, the config and
 * the clock of the transitions, and the ways to run transitions (one call, several in
 * one round trip, a batched one per partition) and batched reads of wait records.
 */

import { RendezvousError } from "@rendezvous/protocol";
import type { ChainableCommander } from "ioredis";
import { type BatchCommand, type BatchReply, execBatch } from "./batch.js";
import type { Config } from "./config.js";
import type { KeyLayout, PartitionKeys } from "./keys.js";
import { type CountDelta, Quotas } from "./quotas.js";
import { isCluster, type RedisLike } from "./redis.js";
import { asReply, type Reply } from "./transitions/replies.js";
import { type Commander, runScript, type ScriptCall } from "./transitions/run.js";

/** What the Store needs of the config. */
export type StoreConfig = Pick<
  Config,
  | "partitions"
  | "retentionMs"
  | "dedupWindowMs"
  | "fanoutCap"
  | "maxTimeoutMs"
  | "maxMetadataBytes"
  | "maxListScan"
  | "maxListPageBytes"
  | "eventTypes"
  | "quotas"
  | "tenants"
>;

function command(call: ScriptCall): BatchCommand {
  return { key: call.keys[0] ?? null, add: (pipeline) => void runScript(pipeline as Commander, call) };
}

const ok = (value: unknown): BatchReply => [null, value];
const failed = (err: Error): BatchReply => [err, null];

/**
 * Scripts in one round trip. On a single Redis they go straight on the connection
 * (coalesceWrites makes them one socket write, as a pipeline would be, without
 * building one); on a cluster, execBatch's pipelines per slot.
 */
function runCalls(redis: RedisLike, calls: ScriptCall[]): Promise<BatchReply[]> {
  if (isCluster(redis)) return execBatch(redis, calls.map(command));
  return Promise.all(calls.map((call) => runScript(redis, call).then(ok, failed)));
}

export class EngineContext {
  /** the tenants' quotas and counts (quotas.ts) */
  readonly quotas: Quotas;

  constructor(
    readonly redis: RedisLike,
    readonly keys: KeyLayout,
    readonly config: StoreConfig,
    /** the fixed clock of the transitions (tests), or undefined: Redis TIME */
    readonly clock: () => number | undefined,
    /** the quotas whose limits this context's are (Store.withConnection), else its own */
    quotasOf?: Quotas,
  ) {
    this.quotas = quotasOf ? quotasOf.withConnection(redis, keys) : new Quotas(redis, keys, config);
  }

  /**
   * The second step beside a transition: its changes to the tenants' counts. A failure
   * is not the transition's (it has committed): the recount sets the count right.
   */
  async noteCounts(deltas: ReadonlyMap<string, CountDelta>): Promise<void> {
    if (deltas.size === 0) return;
    await this.quotas.note(deltas).catch(() => undefined);
  }

  now(): number | undefined {
    return this.clock();
  }

  /** The partition keys of a wait. @throws RendezvousError not_found for an id of no partition */
  partitionOf(waitId: string): PartitionKeys {
    const p = this.keys.waitPartition(waitId);
    if (p === null) throw new RendezvousError("not_found");
    return this.keys.partition(p);
  }

  async run(call: ScriptCall): Promise<Reply> {
    return asReply(await runScript(this.redis, call), call.script);
  }

  /**
   * Runs several scripts in one round trip (on a cluster: one pipeline per partition,
   * concurrently), then `after` in the same pipelines (a command of a call's slot goes
   * behind it); a script or command error becomes a thrown error.
   */
  async runAll(calls: ScriptCall[], after: BatchCommand[] = []): Promise<Reply[]> {
    if (calls.length === 0 && after.length === 0) return [];
    if (calls.length === 1 && after.length === 0) return [await this.run(calls[0] as ScriptCall)];
    const results =
      after.length === 0
        ? await runCalls(this.redis, calls)
        : await execBatch(this.redis, [...calls.map(command), ...after]);
    for (const [err] of results) if (err) throw err;
    return calls.map((call, i) => asReply(results[i]?.[1], call.script));
  }

  /**
   * Runs several scripts in one round trip, as `runAll` without `after`, but answers each
   * call's reply or its error in its place instead of throwing the first error: a caller
   * acts on the replies that came back before it reports a failed one.
   */
  async runAllSettled(calls: ScriptCall[]): Promise<Array<Reply | Error>> {
    if (calls.length === 0) return [];
    if (calls.length === 1) {
      try {
        return [await this.run(calls[0] as ScriptCall)];
      } catch (err) {
        return [err instanceof Error ? err : new Error(String(err))];
      }
    }
    const results = await runCalls(this.redis, calls);
    return calls.map((call, i) => {
      const [err, value] = results[i] ?? [new Error("no reply"), undefined];
      return err ? err : asReply(value, call.script);
    });
  }

  /**
   * Runs a batched script once per partition over the items it concerns (items of
   * one partition keep their order; with `most`, in calls of at most that many) and
   * hands back each item's own reply.
   */
  async perPartition<T = unknown>(
    indices: number[],
    partitionOf: (i: number) => PartitionKeys,
    call: (k: PartitionKeys, members: number[]) => ScriptCall,
    /**
     * the script's reply for a call → one value per member (default: the reply is that
     * list); every call that answered is split, in order, before a failed one is thrown
     */
    split: (reply: unknown, count: number, members: number[]) => T[] = (reply) => (Array.isArray(reply) ? reply : []),
    most = Number.POSITIVE_INFINITY,
  ): Promise<T[]> {
    const entries = groupByPartition(indices, partitionOf, most);
    const calls = entries.map(([k, members]) => call(k, members));
    const results = await runCalls(this.redis, calls);
    return spread(entries, results, split, (g) => calls[g]?.script);
  }

  /**
   * perPartition's groups (items of one partition in their order) in calls of a script that
   * takes several partitions (a single Redis only: a call's keys are of several slots), each
   * call of whole groups and of at most `most` items in all (a larger group alone: a call's
   * length bounds how long its script holds Redis), sent in one round trip. `replies` turns
   * a call's reply into one reply per group of it, split as perPartition's.
   */
  async acrossPartitions<R, T>(
    indices: number[],
    partitionOf: (i: number) => PartitionKeys,
    call: (groups: ReadonlyArray<readonly [PartitionKeys, number[]]>) => ScriptCall,
    replies: (reply: unknown, groups: number) => R[],
    split: (reply: R, count: number, members: number[]) => T[],
    most: number,
  ): Promise<T[]> {
    if (isCluster(this.redis)) throw new RendezvousError("internal", "acrossPartitions: not on a Redis Cluster");
    const bundles: Array<Array<[PartitionKeys, number[]]>> = [];
    let size = Number.POSITIVE_INFINITY;
    for (const group of groupByPartition(indices, partitionOf, Number.POSITIVE_INFINITY)) {
      if (size + group[1].length > most) {
        bundles.push([]);
        size = 0;
      }
      bundles.at(-1)?.push(group);
      size += group[1].length;
    }
    const calls = bundles.map(call);
    const results = await runCalls(this.redis, calls);
    // one [error, reply] per group, in the groups' order
    const each: Array<[Error | null, unknown]> = [];
    const script: string[] = [];
    bundles.forEach((bundle, n) => {
      const [err, value] = results[n] ?? [null, null];
      const parts = err ? bundle.map(() => null) : replies(value, bundle.length);
      for (const r of parts) {
        each.push([err, r]);
        script.push(calls[n]?.script ?? "");
      }
    });
    return spread(
      bundles.flat(),
      each,
      split as (reply: unknown, count: number, members: number[]) => T[],
      (g) => script[g],
    );
  }

  /**
   * One command per wait id on its record (`key` = its partition's waits hash, `id` the
   * field), in one round trip; an id of no partition answers "". Every batched read of
   * wait records goes through here.
   */
  perWaitRecord(
    waitIds: string[],
    command: (pipeline: ChainableCommander, key: string, id: string) => unknown,
  ): Promise<BatchReply[]> {
    return execBatch(
      this.redis,
      waitIds.map((id): BatchCommand => {
        const p = this.keys.waitPartition(id);
        if (p === null) return { key: null, add: (pipeline) => pipeline.echo("") };
        const key = this.keys.partition(p).waits;
        return { key, add: (pipeline) => command(pipeline, key, id) };
      }),
    );
  }
}

/** Items by partition, in order of first appearance (each group in calls of at most `most`). */
function groupByPartition(
  indices: number[],
  partitionOf: (i: number) => PartitionKeys,
  most: number,
): Array<[PartitionKeys, number[]]> {
  const groups = new Map<PartitionKeys, number[]>();
  for (const i of indices) {
    const k = partitionOf(i);
    const members = groups.get(k);
    if (members) members.push(i);
    else groups.set(k, [i]);
  }
  const entries: Array<[PartitionKeys, number[]]> = [];
  for (const [k, members] of groups) {
    for (let from = 0; from < members.length; from += most) entries.push([k, members.slice(from, from + most)]);
  }
  return entries;
}

/**
 * Each group's reply (or error) split into one value per member, at the member's item
 * index (a sparse array: items in no group stay empty); every group that answered is split,
 * in order, before a failed one is thrown.
 */
function spread<T>(
  entries: ReadonlyArray<readonly [PartitionKeys, number[]]>,
  results: ReadonlyArray<[Error | null, unknown]>,
  split: (reply: unknown, count: number, members: number[]) => T[],
  script: (g: number) => string | undefined,
): T[] {
  const out: T[] = [];
  let failed: Error | undefined;
  entries.forEach(([, members], g) => {
    const [err, value] = results[g] ?? [null, null];
    if (err) {
      failed ??= err;
      return;
    }
    const values = split(value, members.length, members);
    if (values.length !== members.length) {
      throw new RendezvousError("internal", `${script(g)}: malformed batch reply`);
    }
    members.forEach((i, j) => {
      out[i] = values[j] as T;
    });
  });
  if (failed) throw failed;
  return out;
}
