/**
 * ingestEvents (lua/ingestEvents-9.lua): dedupEvents' claims and acceptEvents in one
 * step, on a single Redis (docs/architecture.md, "Ingest in one step").
 */

import type { PartitionKeys } from "../keys.js";
import { type Accepted, type AcceptMatchArgs, acceptArgs, acceptEventsResult } from "./acceptEvents.js";
import type { AppendEventsArgs } from "./appendEvents.js";
import { Packer } from "./packer.js";
import { Code } from "./replies.js";
import { type ScriptCall, transitionCall } from "./run.js";

/** appendEvents' arguments, acceptEvents' match part when the process has a matcher (else append only), and the claims. */
export interface IngestEventsArgs extends AppendEventsArgs, Partial<AcceptMatchArgs> {
  windowMs: number;
  /** per event (the order of `events`): its dedup record and the partition of its event key */
  claims: Array<{ record: string; partition: PartitionKeys }>;
}

export function ingestEventsCall(k: PartitionKeys, a: IngestEventsArgs): ScriptCall {
  // each event partition's events hash and expiry zset once, numbered in order of appearance
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
  const { traces, ...accept } = acceptArgs(a);
  return transitionCall("ingestEvents", k, { ...accept, windowMs: a.windowMs, dedup: dedup.done(), traces }, restKeys);
}

/** The reply: acceptEvents', or null when an event was claimed before with other content (nothing written). */
export function ingestEventsResult(reply: unknown): Accepted | null {
  return reply === Code.CONFLICT ? null : acceptEventsResult(reply);
}
