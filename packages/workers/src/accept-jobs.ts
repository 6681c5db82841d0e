/**
 * A tenant's queue as the accept adds its continuation jobs itself (`AcceptJobs`,
 * lua/ingestDispatchEvents-18.lua; docs/architecture.md, "Continuations added in the
 * accept"): BullMQ's addStandardJob as the Lua function the script calls, the queue's keys,
 * and the arguments BullMQ builds for a continuation job of the queue, collected once for a
 * sample job (job-adds.ts, `collect`): its packed options, whose job id the script sets per
 * job, and the layout of its job arguments, which must be [the queue's key prefix, the job
 * id, the name, the timestamp] and nothing more, for the script writes them so.
 */
import { type AcceptJobs, encodeParts } from "@rendezvous/engine";
import type { Queue } from "bullmq";
import { Packr, unpack } from "msgpackr";
import { CONTINUATION_JOB, continuationJobOpts } from "./handouts.js";
import { ADD_ONE, collect } from "./job-adds.js";

/** the sample job's id: what the collected arguments must show where the script writes each job's */
const SAMPLE_ID = "rendezvous-sample-job";

/** MessagePack as BullMQ packs its scripts' arguments */
const packr = new Packr({ useRecords: false, encodeUndefinedAsNil: true });

/** The header of a MessagePack array (`0x90`) or map (`0x80`) of `n` items. */
function header(kind: 0x90 | 0x80, n: number): Buffer {
  if (n < 16) return Buffer.of(kind | n);
  const b = Buffer.alloc(5);
  b[0] = kind === 0x90 ? 0xdd : 0xdf;
  b.writeUInt32BE(n, 1);
  return b;
}

/**
 * The job's options packed as a map whose last entry is `jobId` with its value left out:
 * the script puts each job's packed id after it (continuation-jobs.lua), so that it packs
 * no options table per job and unpacks none per call.
 */
function optsLessJobId(opts: Record<string, unknown>): Buffer {
  const entries = Object.entries(opts).filter(([k]) => k !== "jobId");
  const parts = [header(0x80, entries.length + 1)];
  for (const [k, v] of entries) parts.push(packr.pack(k), packr.pack(v));
  parts.push(packr.pack("jobId"));
  return Buffer.concat(parts);
}

/**
 * `queue`'s AcceptJobs for the waits of `tenant`, its jobs kept `retentionMs` once
 * completed; undefined (with a warning, once per process) where bullmq is not as expected.
 */
export async function acceptJobsOf(
  queue: Queue,
  tenant: string,
  retentionMs: number,
  warn: (msg: string) => void,
): Promise<AcceptJobs | undefined> {
  const sample = { name: CONTINUATION_JOB, data: {}, opts: continuationJobOpts(SAMPLE_ID, retentionMs) };
  const collected = await collect(queue, [sample], warn);
  const [args, , opts] = collected?.args ?? [];
  if (!collected?.keys || !(args instanceof Uint8Array) || !(opts instanceof Uint8Array)) return undefined;
  const jobArgs = unpack(args) as unknown[];
  const jobOpts = unpack(opts) as Record<string, unknown>;
  const [prefix, id, name, timestamp, ...rest] = jobArgs;
  if (
    typeof prefix !== "string" ||
    id !== SAMPLE_ID ||
    name !== CONTINUATION_JOB ||
    typeof timestamp !== "number" ||
    rest.some((v) => v !== null && v !== undefined) ||
    jobOpts.jobId !== SAMPLE_ID
  ) {
    warn("continuation jobs added by the dispatcher only (bullmq's job arguments are not as expected)");
    return undefined;
  }
  return {
    addOne: ADD_ONE,
    keys: collected.keys,
    args: Buffer.concat([header(0x90, 4), packr.pack(prefix)]),
    queue: queue.name,
    opts: optsLessJobId(jobOpts),
    tenant: encodeParts(tenant),
  };
}
