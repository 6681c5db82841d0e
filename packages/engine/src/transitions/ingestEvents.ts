/**
 * Ingest in one step on a single Redis (docs/architecture.md, "Ingest in one step"):
 * dedupEvents' claims with acceptEvents (lua/ingestEvents-9.lua) or, in a process without a
 * matcher, with appendEvents (lua/claimAppendEvents-3.lua).
 */

import { RendezvousError } from "@rendezvous/protocol";
import { luaScripts } from "../generated/lua.js";
import type { PartitionKeys } from "../keys.js";
import { type AcceptEventsArgs, type Accepted, acceptArgs, acceptEventsResult } from "./acceptEvents.js";
import { type AppendEventsArgs, type Appended, appendArgs, appendEventsResults } from "./appendEvents.js";
import { Packer } from "./packer.js";
import { Code } from "./replies.js";
import { keyedCall, prefixedScript, type ScriptCall, transitionCall } from "./run.js";

/** The claims of a call: per event (the order of `events`), its dedup record and the partition of its event key. */
export interface Claims {
  windowMs: number;
  claims: Array<{ record: string; partition: PartitionKeys }>;
}

/** The claims pairs' keys (each event partition's events hash and expiry zset, once, in order of appearance) and the packed dedup argument. */
function claimsOf(a: Claims): { restKeys: string[]; dedup: Buffer } {
  const pairOf = new Map<PartitionKeys, number>();
  const restKeys: string[] = [];
  const dedup = new Packer(a.claims.length * 40);
  for (const c of a.claims) {
    let n = pairOf.get(c.partition);
    if (n === undefined) {
      n = pairOf.size + 1;
      pairOf.set(c.partition, n);
      restKeys.push(c.partition.events, c.partition.expiry);
    }
    dedup.field(String(n)).field(c.record);
  }
  return { restKeys, dedup: dedup.done() };
}

export function ingestEventsCall(k: PartitionKeys, a: AcceptEventsArgs & Claims): ScriptCall {
  const { restKeys, dedup } = claimsOf(a);
  return transitionCall("ingestEvents", k, { ...acceptArgs(a), windowMs: a.windowMs, dedup }, restKeys);
}

export function claimAppendEventsCall(k: PartitionKeys, a: AppendEventsArgs & Claims): ScriptCall {
  const { restKeys, dedup } = claimsOf(a);
  return transitionCall("claimAppendEvents", k, { ...appendArgs(a), windowMs: a.windowMs, dedup }, restKeys);
}

/**
 * The continuation jobs an ingestDispatchEvents call adds (lua/ingestDispatchEvents-18.lua):
 * a tenant's queue as BullMQ lays it out (packages/workers/src/accept-jobs.ts, acceptJobsOf).
 */
export interface AcceptJobs {
  /** BullMQ's addStandardJob as the Lua function `addOne(KEYS, ARGV)`, loaded before the script */
  addOne: string;
  /** the queue's keys, in the order of addStandardJob's KEYS (9) */
  keys: readonly string[];
  /**
   * a job's arguments as far as its id (the first of addStandardJob's ARGV, packed): a
   * MessagePack array of 4 and the queue's key prefix, "<prefix>:<queue>:"
   */
  args: Buffer;
  /** the queue's name */
  queue: string;
  /**
   * BullMQ's options of the queue's continuation jobs as far as their job id's value: a
   * MessagePack map whose last entry is `jobId`, its value the job's id, put after it per job
   */
  opts: Buffer;
  /** the encoded tenant whose waits' jobs the call adds */
  tenant: string;
}

/** The header's names of a partition's keys (KEYS[1..9]) and of the queue's (KEYS[10..18]), in their order. */
const NAMES = luaScripts.ingestDispatchEvents.keys as readonly string[];
const PARTITION_KEYS = NAMES.slice(0, 9) as ReadonlyArray<keyof PartitionKeys>;
const JOB_KEYS = NAMES.slice(9, 18);

/** One partition's part of an ingestDispatchEvents call: its keys, and its accept's arguments with its events' claims. */
export interface PartitionAccept {
  k: PartitionKeys;
  args: AcceptEventsArgs & Claims;
}

/**
 * ingestEventsCall that also adds the continuation jobs of the waits it resolves, on `jobs`'
 * queue (no traces: never with tracing), for the events of one or more partitions of a
 * single Redis (`parts`, at least one; their fanout cap, retention, matchers, hand-off,
 * clock and dedup window are the first's).
 */
export function ingestDispatchEventsCall(parts: readonly PartitionAccept[], jobs: AcceptJobs): ScriptCall {
  const [first, ...others] = parts as [PartitionAccept, ...PartitionAccept[]];
  const { restKeys, dedup } = claimsOf({ windowMs: first.args.windowMs, claims: parts.flatMap((p) => p.args.claims) });
  const named: Record<string, string> = { ...(first.k as unknown as Record<string, string>) };
  JOB_KEYS.forEach((name, i) => {
    named[name] = jobs.keys[i] as string;
  });
  // (the others' own arguments only: keep time, id prefix, events; the rest is the first's)
  const more: Array<string | Buffer> = [];
  for (const p of others) {
    const a = appendArgs(p.args);
    more.push(String(a.keepMs), p.args.idPrefix, a.events);
  }
  const call = keyedCall("ingestDispatchEvents", named as Parameters<typeof keyedCall<"ingestDispatchEvents">>[1], {
    ...acceptArgs(first.args),
    windowMs: first.args.windowMs,
    dedup,
    jobArgs: jobs.args,
    jobQueue: jobs.queue,
    jobOpts: jobs.opts,
    jobTenant: jobs.tenant,
    others: more,
  });
  for (const p of others) for (const name of PARTITION_KEYS) call.keys.push(p.k[name] as string);
  call.keys.push(...restKeys);
  call.lua = prefixedScript("ingestDispatchEvents", jobs.addOne);
  return call;
}

/** ingestDispatchEvents' reply: one ingestEventsResult per partition of the call, in order. */
export function ingestDispatchEventsResults(reply: unknown, parts: number): Array<Accepted | null> {
  if (reply === Code.CONFLICT) return new Array(parts).fill(null);
  const replies = reply as unknown[];
  if (!Array.isArray(replies) || replies.length !== parts) {
    throw new RendezvousError("internal", "ingestDispatchEvents: malformed reply");
  }
  return replies.map(acceptEventsResult);
}

/** ingestEvents' reply: acceptEvents', or null when an event was claimed before with other content (nothing written). */
export function ingestEventsResult(reply: unknown): Accepted | null {
  return reply === Code.CONFLICT ? null : acceptEventsResult(reply);
}

/** claimAppendEvents' reply: appendEvents', or null as ingestEventsResult's. */
export function claimAppendEventsResult(reply: unknown): Appended[] | null {
  return reply === Code.CONFLICT ? null : appendEventsResults(reply);
}
