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
import { unpack } from "msgpackr";
import { CONTINUATION_JOB, continuationJobOpts } from "./handouts.js";
import { ADD_ONE, collect } from "./job-adds.js";

/** the sample job's id: what the collected arguments must show where the script writes each job's */
const SAMPLE_ID = "rendezvous-sample-job";

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
    prefix,
    queue: queue.name,
    opts: Buffer.from(opts),
    tenant: encodeParts(tenant),
  };
}
