/**
 * The jobs of one dispatch step for one queue, added in one script call per JOBS_PER_CALL.
 * BullMQ adds a job with its script addStandardJob, one call per job: per job a command of
 * 12 arguments (the queue's 9 keys among them) to build, send and parse, and a script call's
 * fixed cost in Redis. Here the installed bullmq's own addStandardJob runs once per job in a
 * call (its text, unchanged, as a Lua function whose helpers are made once per call:
 * add-one.ts), with the arguments BullMQ itself builds for each job: `Job.addJob` on a
 * transaction (BullMQ's IRedisTransaction) that
 * collects the calls it queues instead of sending them. The jobs, their events and their
 * idempotence by job id are BullMQ's in every byte, as `Queue.add` would make them.
 *
 * A step of one job goes by BullMQ's own add (one call as well, for about as much work in the
 * process: `npm run bench:handout`). On a single Redis the dispatcher takes STEP_LUA instead
 * (addStepJobsRecorded): the same adds, then the step's timeline entries and ack, one call. So does a step where bullmq is not as this expects
 * (its script, or the command a job's options take, is another), with a warning, once.
 */
import { createRequire } from "node:module";
import { type ArgValue, foreignScript, luaScripts, type RedisLike, type ScriptCall } from "@rendezvous/engine";
import { Job, type Queue } from "bullmq";
import { addOneLua } from "./add-one.js";

// (the CommonJS build, which `import "bullmq"` loads too: the script of the Job class used here)
const { addStandardJob } = createRequire(import.meta.url)("bullmq/dist/cjs/scripts/addStandardJob-9.js") as {
  addStandardJob?: { content?: unknown; keys?: unknown };
};

/** A job as BullMQ's `addBulk` takes it. */
export type JobToAdd = Parameters<Queue["addBulk"]>[0][number];

/**
 * Most jobs per call. A call holds Redis while it runs (some 196k instructions per job,
 * `npm run bench:redis-instructions -- --only add`), and a command of the resolve path that
 * arrives meanwhile waits for it: a step of more jobs goes in several calls, sent together.
 * BullMQ's own adds of a step (one call per job, sent as one pipeline) let other clients in
 * every 16 KB that Redis reads, about a dozen Wait-sized jobs; 16 per call holds Redis about
 * as long, and keeps most of what one call per step saves (`npm run bench:handout`).
 */
export const JOBS_PER_CALL = 16;
const KEYS = 9;
const ARGS = 3;
const COMMAND = "addStandardJob";

/** BullMQ's addStandardJob, its text unchanged, as the Lua function `addOne(KEYS, ARGV)` (add-one.ts). */
export const ADD_ONE = addOneLua(String(addStandardJob?.content));

/**
 * BullMQ's script as a function of its KEYS and ARGV, run once per job: ARGV holds the jobs'
 * arguments one after the other (three each); the reply is each job's, in order (its id,
 * or BullMQ's negative error code).
 */
export const JOB_ADDS_LUA = `${ADD_ONE}
local replies = {}
for i = 0, #ARGV / ${ARGS} - 1 do
  replies[i + 1] = addOne(KEYS, { ARGV[i * ${ARGS} + 1], ARGV[i * ${ARGS} + 2], ARGV[i * ${ARGS} + 3] })
end
return replies`;

/**
 * A step in one call on a single Redis (docs/architecture.md, "Continuations: one queue,
 * two transports"): its jobs as JOB_ADDS_LUA adds them, then, when every add succeeded, the waits'
 * `continuation_dispatched` entries (the annotateWaits transition, its text unchanged as
 * the body of a function) and the ack of the step's outbox entries: all or nothing, so
 * an entry is never acknowledged, nor a wait annotated, without its job. KEYS: the
 * queue's 9, the partition's waits hash, its outbox stream. ARGV: the number of jobs,
 * their arguments (three each), the ack's group, the number of entry ids and the ids,
 * then annotateWaits' ARGV. The reply is the jobs' (a failed add ends the call there).
 */
export const STEP_LUA = `${ADD_ONE}
local function annotateWaits(KEYS, ARGV)
${luaScripts.annotateWaits.lua}
end
local n = tonumber(ARGV[1])
local replies = {}
for i = 0, n - 1 do
  local reply = addOne(KEYS, { ARGV[i * ${ARGS} + 2], ARGV[i * ${ARGS} + 3], ARGV[i * ${ARGS} + 4] })
  replies[i + 1] = reply
  if type(reply) == "number" and reply < 0 then
    return replies
  end
end
local at = n * ${ARGS} + 2
local group, m = ARGV[at], tonumber(ARGV[at + 1])
annotateWaits({ KEYS[${KEYS + 1}] }, { unpack(ARGV, at + 2 + m) })
redis.call("XACK", KEYS[${KEYS + 2}], group, unpack(ARGV, at + 2, at + 1 + m))
return replies`;

const supported = typeof addStandardJob?.content === "string" && addStandardJob.keys === KEYS;
const addMany = supported ? foreignScript(JOB_ADDS_LUA, KEYS) : undefined;
const addStep = supported ? foreignScript(STEP_LUA, KEYS + 2) : undefined;

/** What a step's one call records after its jobs: an annotateWaits call (one partition's) and the ack of its entries. */
export interface StepRecord {
  annotate: ScriptCall;
  ack: { key: string; group: string; ids: readonly string[] };
}

/** Not this script's case: the caller adds the step's jobs BullMQ's own way. */
class NotStandard extends Error {}

/**
 * The calls Job.addJob queues on a transaction, collected: the keys (the queue's, the same
 * for every job) and each job's arguments. Anything but addStandardJob is not collected.
 */
class Collector {
  keys: string[] | undefined;
  readonly args: ArgValue[] = [];

  runCommand(name: string, argv: ArgValue[]): this {
    // (BullMQ names its commands "<script>:<version>")
    if (name.split(":")[0] !== COMMAND || argv.length !== KEYS + ARGS) throw new NotStandard(name);
    const keys = argv.slice(0, KEYS) as string[];
    if (this.keys === undefined) this.keys = keys;
    else if (keys.some((k, i) => k !== this.keys?.[i])) throw new NotStandard("keys of another queue");
    this.args.push(...argv.slice(KEYS));
    return this;
  }
}

let warned = false;

/** BullMQ's own way: `Queue.add` for one job, `addBulk` (a pipeline of adds) for more. */
function bullmqAdd(queue: Queue, jobs: JobToAdd[]): Promise<unknown> {
  const [one] = jobs;
  return one && jobs.length === 1 ? queue.add(one.name, one.data, one.opts) : queue.addBulk(jobs);
}

/** The arguments BullMQ builds for `jobs`, collected; undefined (with a warning, once) where bullmq is not as expected. */
export async function collect(
  queue: Queue,
  jobs: JobToAdd[],
  warn: (msg: string) => void,
): Promise<Collector | undefined> {
  const collector = new Collector();
  try {
    if (!addMany) throw new NotStandard("no addStandardJob script");
    // (the collector answers at once, so each addJob settles without a round trip)
    await Promise.all(
      jobs.map(({ name, data, opts }) => new Job(queue, name, data, opts, opts?.jobId).addJob(collector as never)),
    );
  } catch (err) {
    if (!(err instanceof NotStandard)) throw err;
    if (!warned) {
      warned = true;
      warn(`continuation jobs added one call each (bullmq is not as expected: ${err.message})`);
    }
    return undefined;
  }
  return collector;
}

/** The jobs' replies, or an Error naming BullMQ's code for a job it refused. */
function checked(replies: Array<string | number>): Array<string | number> {
  const failed = replies.find((r) => typeof r === "number" && r < 0);
  if (failed !== undefined) throw new Error(`BullMQ's addStandardJob answered ${failed}`);
  return replies;
}

/**
 * Adds a step's `jobs` (at most JOBS_PER_CALL, every one on `queue`) and does what `record`
 * says in one call (STEP_LUA) on `connection`, a single Redis's: true when done, false when
 * this bullmq is not as expected (nothing sent: the caller takes the steps one by one).
 */
export async function addStepJobsRecorded(
  queue: Queue,
  connection: RedisLike,
  jobs: JobToAdd[],
  record: StepRecord,
  warn: (msg: string) => void,
): Promise<boolean> {
  if (jobs.length > JOBS_PER_CALL) throw new RangeError(`a recorded step takes at most ${JOBS_PER_CALL} jobs`);
  const collector = jobs.length > 0 ? await collect(queue, jobs, warn) : undefined;
  if (!addStep || !collector?.keys) return false;
  const { annotate, ack } = record;
  const args: ArgValue[] = [jobs.length, ...collector.args, ack.group, ack.ids.length, ...ack.ids, ...annotate.args];
  checked((await addStep(connection, [...collector.keys, ...annotate.keys, ack.key], args)) as Array<string | number>);
  return true;
}

/**
 * Adds `jobs` to `queue` in one script call per JOBS_PER_CALL jobs on `connection` (the
 * queue's own); each job is idempotent by its job id (an id already in the queue adds nothing,
 * as with BullMQ's add); the replies are the jobs' ids, in order.
 */
export async function addStepJobs(
  queue: Queue,
  connection: RedisLike,
  jobs: JobToAdd[],
  warn: (msg: string) => void,
): Promise<unknown> {
  if (jobs.length === 0) return [];
  // (one job: BullMQ's own add is one call too, for about what a collection costs the process)
  const collector = jobs.length === 1 ? undefined : await collect(queue, jobs, warn);
  if (!collector || !addMany) return bullmqAdd(queue, jobs);
  const keys = collector.keys as string[];
  const calls: Array<Promise<unknown>> = [];
  for (let i = 0; i < collector.args.length; i += JOBS_PER_CALL * ARGS) {
    calls.push(addMany(connection, keys, collector.args.slice(i, i + JOBS_PER_CALL * ARGS)));
  }
  return checked(((await Promise.all(calls)) as Array<Array<string | number>>).flat());
}
