/** dedupEvents (lua/dedupEvents-2.lua): first step of ingest, in the event keys' partition. */

import type { PartitionKeys } from "../keys.js";
import { Packer } from "./packer.js";
import { clock, type ScriptCall, transitionCall } from "./run.js";

export interface DedupEventsArgs {
  windowMs: number;
  now?: number;
  /** each event's key and dedup record, in order */
  events: Array<{ eventKey: string; record: string }>;
}

export function dedupEventsCall(k: PartitionKeys, a: DedupEventsArgs): ScriptCall {
  const packed = new Packer(a.events.length * 96);
  for (const e of a.events) packed.field(e.eventKey).field(e.record);
  return transitionCall("dedupEvents", k, { windowMs: a.windowMs, now: clock(a.now), events: packed.done() });
}

/** The reply, one code digit per event: their codes in order (CREATED, PENDING or CONFLICT). */
export function dedupEventsCodes(reply: unknown): number[] {
  return Array.from(String(reply), Number);
}
