/**
 * Typed access to the Lua transitions: one `<script>Args()` helper per script whose
 * KEYS and ARGV order follows the script header line by line, and `runScript` which
 * calls the versioned command (EVALSHA with EVAL fallback, via ioredis defineCommand).
 */

import { RendezvousError } from "@rendezvous/protocol";
import type { ChainableCommander } from "ioredis";
import { luaScripts, type ScriptName } from "./generated/lua.js";
import { MATCHER_GROUP, type PartitionKeys } from "./keys.js";
import type { RedisLike } from "./redis.js";

export type { RedisLike };
export type Commander = RedisLike | ChainableCommander;

export interface ScriptCall {
  script: ScriptName;
  keys: string[];
  args: Array<string | number | Buffer>;
}

const defined = new WeakSet<object>();

/** Registers every script on a connection once (pipelines inherit them). */
export function defineScripts(redis: RedisLike): void {
  if (defined.has(redis)) return;
  for (const def of Object.values(luaScripts)) {
    redis.defineCommand(def.command, { numberOfKeys: def.numberOfKeys, lua: def.lua });
  }
  defined.add(redis);
}

type ScriptFn = (...args: Array<string | number | Buffer>) => Promise<unknown>;

/** Runs a script on a connection (returns its reply) or queues it on a pipeline. */
export function runScript(target: Commander, call: ScriptCall): Promise<unknown> {
  const def = luaScripts[call.script];
  if (call.keys.length !== def.numberOfKeys) {
    throw new Error(`${call.script} takes ${def.numberOfKeys} keys, got ${call.keys.length}`);
  }
  const fn = (target as unknown as Record<string, ScriptFn>)[def.command];
  if (!fn) throw new Error(`script ${call.script} is not defined on this connection`);
  return fn.call(target, ...call.keys, ...call.args);
}

/** "" lets the script read Redis TIME; a number fixes the clock (tests). */
function clock(now?: number): string {
  return now === undefined ? "" : String(now);
}

/**
 * A packed argument: fields one after the other, each a 5-character length header
 * (UTF-8 bytes, base 64, digit = char code − 48, most significant first) and the
 * value. Lua reads the header with string.byte (nextField in
 * lua/includes/common.lua): no number parsing. Built as a Buffer in one pass: each
 * value is encoded once, straight into place (a string would be measured, then
 * measured and encoded again by ioredis).
 */
export class Packer {
  #buf: Buffer;
  #at = 0;

  constructor(expectedChars = 4096) {
    this.#buf = Buffer.allocUnsafe(expectedChars + 64);
  }

  field(value: string): this {
    // UTF-8 takes at most 3 bytes per UTF-16 code unit
    const room = this.#at + 5 + value.length * 3;
    if (room > this.#buf.length) {
      const grown = Buffer.allocUnsafe(Math.max(room, this.#buf.length * 2));
      this.#buf.copy(grown, 0, 0, this.#at);
      this.#buf = grown;
    }
    const n = this.#buf.write(value, this.#at + 5, "utf8");
    if (n >= 2 ** 30) throw new RendezvousError("payload_too_large", "a packed field is limited to 1 GiB");
    const b = this.#buf;
    const at = this.#at;
    b[at] = 48 + (n >>> 24);
    b[at + 1] = 48 + ((n >>> 18) & 63);
    b[at + 2] = 48 + ((n >>> 12) & 63);
    b[at + 3] = 48 + ((n >>> 6) & 63);
    b[at + 4] = 48 + (n & 63);
    this.#at = at + 5 + n;
    return this;
  }

  /** The packed bytes (a view: the packer is done with them). */
  done(): Buffer {
    return this.#buf.subarray(0, this.#at);
  }
}

export function dedupEventsArgs(
  k: PartitionKeys,
  a: { windowMs: number; now?: number; events: Array<{ eventKey: string; record: string }> },
): ScriptCall {
  const packed = new Packer(a.events.length * 96);
  for (const e of a.events) packed.field(e.eventKey).field(e.record);
  return { script: "dedupEvents", keys: [k.events, k.expiry], args: [a.windowMs, clock(a.now), packed.done()] };
}

export function appendEventsArgs(
  k: PartitionKeys,
  a: { keepMs: number; now?: number; events: Array<{ eventKey: string; head: string }> },
): ScriptCall {
  let chars = 0;
  for (const e of a.events) chars += e.eventKey.length + e.head.length + 10;
  const packed = new Packer(chars * 3);
  for (const e of a.events) packed.field(e.eventKey).field(e.head);
  return {
    script: "appendEvents",
    keys: [k.stream, k.events, k.expiry],
    args: [a.keepMs, clock(a.now), packed.done()],
  };
}

export function forgetRunPositionsArgs(
  k: PartitionKeys,
  a: { entries: Array<{ runPosition: string; tag: string }> },
): ScriptCall {
  const args: string[] = [];
  for (const e of a.entries) args.push(e.runPosition, e.tag);
  return { script: "forgetRunPositions", keys: [k.runs], args };
}

export function claimRunPositionArgs(
  k: PartitionKeys,
  a: { runPosition: string /** the wait's partition */; waitId: string; defHash: string },
): ScriptCall {
  return { script: "claimRunPosition", keys: [k.runs], args: [a.runPosition, a.waitId, a.defHash] };
}

export function registerWaitArgs(
  k: PartitionKeys,
  a: {
    waitId: string;
    record: string;
    timeoutMs?: number;
    deadlineMs?: number;
    sinceMs?: number;
    retentionMs: number;
    now?: number;
  },
): ScriptCall {
  return {
    script: "registerWait",
    keys: [k.waits, k.waiting, k.done, k.deadlines, k.inbox, k.events, k.outbox, k.expiry],
    args: [a.waitId, a.record, a.timeoutMs ?? "", a.deadlineMs ?? "", a.sinceMs ?? "", a.retentionMs, clock(a.now)],
  };
}

export function matchEventArgs(
  k: PartitionKeys,
  a: { streamId: string; eventKey: string; fanoutCap: number; retentionMs: number; now?: number },
): ScriptCall {
  return {
    script: "matchEvent",
    keys: [k.events, k.waits, k.waiting, k.done, k.deadlines, k.inbox, k.outbox, k.expiry],
    args: [a.streamId, a.eventKey, a.fanoutCap, a.retentionMs, clock(a.now), `w${k.partition}.`],
  };
}

export function timeoutWaitArgs(
  k: PartitionKeys,
  a: { waitId: string; retentionMs: number; now?: number },
): ScriptCall {
  return {
    script: "timeoutWait",
    keys: [k.waits, k.waiting, k.done, k.deadlines, k.stream, k.outbox, k.expiry, k.events],
    args: [a.waitId, a.retentionMs, clock(a.now), MATCHER_GROUP],
  };
}

export function cancelWaitArgs(
  k: PartitionKeys,
  a: { waitId: string; tenantPrefix: string; retentionMs: number; now?: number },
): ScriptCall {
  return {
    script: "cancelWait",
    keys: [k.waits, k.waiting, k.done, k.deadlines, k.outbox, k.expiry],
    args: [a.waitId, a.tenantPrefix, a.retentionMs, clock(a.now)],
  };
}

export function deliverCandidatesArgs(
  k: PartitionKeys,
  a: { indexPrefix: string; matchKeyPrefix: string; limit: number; now?: number },
): ScriptCall {
  return {
    script: "deliverCandidates",
    keys: [k.waiting, k.waits],
    args: [a.indexPrefix, a.matchKeyPrefix, `w${k.partition}.`, a.limit, clock(a.now)],
  };
}

export function deliverWaitsArgs(
  k: PartitionKeys,
  a: { tenantPrefix: string; payload?: string; retentionMs: number; waitIds: string[]; now?: number },
): ScriptCall {
  return {
    script: "deliverWaits",
    keys: [k.waits, k.waiting, k.done, k.deadlines, k.outbox, k.expiry],
    args: [a.tenantPrefix, a.payload ?? "", a.retentionMs, clock(a.now), ...a.waitIds],
  };
}

export function consumeWaitArgs(
  k: PartitionKeys,
  a: { waitId: string; tenantPrefix: string; worker: string; now?: number },
): ScriptCall {
  return { script: "consumeWait", keys: [k.waits], args: [a.waitId, a.tenantPrefix, a.worker, clock(a.now)] };
}

export function annotateWaitArgs(
  k: PartitionKeys,
  a: { waitId: string; tenantPrefix: string; what: string; detail: string; once: boolean; now?: number },
): ScriptCall {
  return {
    script: "annotateWait",
    keys: [k.waits],
    args: [a.waitId, a.tenantPrefix, a.what, a.detail, a.once ? "1" : "", clock(a.now)],
  };
}

export function expireRecordsArgs(k: PartitionKeys, a: { limit: number; now?: number }): ScriptCall {
  return {
    script: "expireRecords",
    keys: [k.expiry, k.waits, k.done, k.events, k.inbox, k.rejected],
    args: [a.limit, clock(a.now)],
  };
}

export function recordRejectionArgs(
  k: PartitionKeys,
  a: { matchKey: string; refusal: string; cap: number; keepMs: number; now?: number },
): ScriptCall {
  return {
    script: "recordRejection",
    keys: [k.rejected, k.expiry],
    args: [a.matchKey, a.refusal, a.cap, a.keepMs, clock(a.now)],
  };
}
