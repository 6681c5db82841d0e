/**
 * Redis instructions per event (not a test): `npm run bench:redis-instructions [-- --events N]`.
 *
 * Wall-clock rates swing with whatever else the machine runs; instruction counts do
 * not. This runs redis-server under valgrind's callgrind (Debian's `valgrind`), once
 * per case, zeroes the counters after connecting and warming up (callgrind_control -z),
 * runs the case, dumps (callgrind_control -d) and reads the instructions executed:
 *
 * - raw XADD: N entries the size of one event, pipelined 500 per round trip (the
 *   baseline of bench:ingest);
 * - store.ingest: N new events in batches of 500 (the ingest transitions, 16 partitions);
 * - store.match: the match of N events, each resolving the one wait registered for it
 *   (the waits and events are set up before the counters are zeroed);
 * - dispatch: a Dispatcher handing out N resolved waits from the outboxes (the BullMQ
 *   job, continuation_dispatched, the ack; the waits are resolved before the zeroing);
 * - accept: `rendezvous start`'s single-event ingest on a single Redis (ingestEvents: the
 *   claims, then acceptEvents, which matches what it appended, in one call), each event
 *   resolving one wait (bench/lib/resolved-waits.ts);
 * - quota: the quota check of N single-event producer requests (lua/takeQuota-1.lua:
 *   the tenant's bufferedEvents count, its producerEventsPerSec and the producer's own
 *   rateLimitPerSec, all three limits set, none reached), one script call each; a batch
 *   request makes one check for all its events.
 *
 * - add: N continuation jobs added (Wait-sized data, in steps of 500 the dispatcher's way, a
 *   script call per 16 jobs; `--add-step N` sets the step, `--add-bulk` adds by BullMQ's
 *   `addBulk` instead), nothing else; complete and compact add their jobs the same way;
 * - complete: a BullMQ worker completing N continuation jobs (Wait-sized data) added with
 *   the dispatcher's `removeOnComplete: { age }` (BullMQ looks for jobs past the age on
 *   every completion), and `complete-keep` the same with no removal at all, for the cost of
 *   that look;
 * - compact: the scheduler's compaction of N completed continuation jobs
 *   (lua/compactContinuations-2.lua, calls of 500).
 * - expire: the scheduler's retention (workers' `expireOutlived`) of the records of N
 *   resolved events (settled waits, event and dedup records, run positions; ingest calls of
 *   `--ingest-batch`), their retention and dedup window 1 s.
 *
 * It prints instructions per event for each and their ratio. Under valgrind redis-server
 * runs some 50× slower, so N is small (default 5,000).
 *
 * `--ingest-batch N` sets the events per ingest call (1: the single-event path);
 * `--accept-batch N` the events per call of the accept case (default 1; 100: a batch request);
 * `--partitions P` the accept case's partition count (default 16);
 * `--compact-batch N` the jobs per call of the compact case (default 500; 10: the scheduler's);
 * `--legacy-index` measures a deployment created before 2026-12-01, whose wait indexes
 * may hold legacy members (the match reads their ranges too; docs/architecture.md);
 * `--match-shape any-of|count-3` makes the match case's waits any-of two types, or count 3
 * (three events per wait: per event, two collect and one resolves);
 * `--only CASE[,CASE…]` runs those cases (raw, ingest, match, dispatch, accept, quota,
 * add, complete, complete-keep, compact, expire, timeout, register, promote); with accept,
 * dispatch, add, complete and compact it also prints a resolved event's instructions by
 * owner (the product's transitions, BullMQ's job add, the host's worker); `--keep DIR` copies each case's dump to
 * DIR/<case>.callgrind for `callgrind_annotate --inclusive=yes DIR/ingest.callgrind`;
 * `--by-mechanism` prints each case's instructions per event by what Redis did with them (the
 * Lua interpreter, its tables, strings, closures and collector, cjson, number formatting,
 * allocation, the commands, AOF, I/O: bench/lib/callgrind-mechanisms.ts), which takes a
 * redis-server with symbols first on PATH (Debian's is stripped; docs/benchmarks.md).
 */
import { spawnSync } from "node:child_process";
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  compactContinuations,
  createResources,
  ensurePartitionCount,
  parseConfig,
  type RedisServer,
  type Resources,
  startRedisServer,
} from "@rendezvous/engine";
import { addStepJobs, expireOutlived } from "@rendezvous/workers";
import { Queue, Worker } from "bullmq";
import { Redis } from "ioredis";
import { pino } from "pino";
import { parseArgs } from "./lib/args.js";
import { byMechanism, type MechanismRow } from "./lib/callgrind-mechanisms.js";
import {
  acceptLikeStart,
  acceptLikeStartWithJobs,
  benchResources,
  dispatchAll,
  registerFor,
  resolveWaits,
} from "./lib/resolved-waits.js";

const args = parseArgs();
const EVENTS = args.number("events", 5000);
const BATCH = 500;
/** events per store.ingest call (--ingest-batch 1: the single-event path) */
const INGEST_BATCH = args.number("ingest-batch", BATCH);
/** events per accept call (--accept-batch 100: a batch request's ingest in `start`) */
const ACCEPT_BATCH = args.number("accept-batch", 1);
/** partitions of the accept case's deployment (--partitions P; default 16) */
const ACCEPT_PARTITIONS = args.number("partitions", 16);
/** jobs per compaction call (--compact-batch 10: the scheduler's, workers' COMPACT_BATCH) */
const COMPACT_BATCH = args.number("compact-batch", BATCH);
/** jobs per add (--add-step N), by the dispatcher's one script call (default) or `--add-bulk` */
const ADD_STEP = args.number("add-step", BATCH);
const ADD_BULK = args.flag("add-bulk");
/** outbox entries per dispatch step (--dispatch-step N; the Dispatcher's default: 50) */
const DISPATCH_STEP = args.number("dispatch-step", 50);
const NOTE = "n".repeat(120);
/** the cases to run (--only a,b,c; all when absent) */
const ONLY = args.string("only", "").split(",").filter(Boolean);
/** the waits of the match case: one type (default), `any-of` (two types), `count-3` */
const MATCH_SHAPE = args.string("match-shape", "one");
if (!["one", "any-of", "count-3"].includes(MATCH_SHAPE)) throw new Error("--match-shape one | any-of | count-3");
const LEGACY_INDEX = args.flag("legacy-index");
/** timeoutMs of the waits the register, promote and accept cases register (0: none) */
const WAIT_TIMEOUT_MS = args.number("wait-timeout-ms", 3_600_000);

/** As a process starts: the deployment's layout read from its meta key (fresh here), or forced legacy. */
async function deployment(res: Resources): Promise<void> {
  await ensurePartitionCount(res.store);
  if (LEGACY_INDEX) res.store.keys.legacyIndex = true;
}
const KEEP = args.string("keep", "");
const BY_MECHANISM = args.flag("by-mechanism");
/** each measured case's instructions by mechanism (--by-mechanism), null: no symbols */
const mechanisms = new Map<Case, MechanismRow[] | null>();
const CASES = [
  "raw",
  "ingest",
  "match",
  "dispatch",
  "accept",
  "accept-jobs",
  "quota",
  "add",
  "complete",
  "complete-keep",
  "compact",
  "expire",
  "timeout",
  "register",
  "promote",
] as const;
type Case = (typeof CASES)[number];
if (ONLY.some((c) => !(CASES as readonly string[]).includes(c))) {
  throw new Error(`--only takes ${CASES.join(", ")}`);
}

async function startUnderCallgrind(): Promise<RedisServer> {
  const dir = mkdtempSync(join(tmpdir(), "rdv-callgrind-"));
  return startRedisServer({
    aof: true,
    dir,
    launcher: ["valgrind", "--tool=callgrind", `--callgrind-out-file=${join(dir, "callgrind.out.%p")}`],
    // (no slow log: under callgrind most commands take longer than its 10 ms, and whether
    // one does depends on the machine's load, so its entries made the counts vary by some
    // 6,000 instructions per event from run to run)
    args: ["--slowlog-log-slower-than", "-1"],
    startTimeoutMs: 60_000,
  });
}

function control(flag: "-z" | "-d", pid: number): void {
  const r = spawnSync("callgrind_control", [flag, String(pid)], { encoding: "utf8" });
  if (r.status !== 0) throw new Error(`callgrind_control ${flag}: ${r.stderr || r.stdout}`);
}

/** Instructions in the last dump of the instance (the part after the zeroing). */
function lastDumpInstructions(inst: RedisServer, name: Case): number {
  // callgrind_control -d writes callgrind.out.<pid>.<n> (n = 1, 2, …)
  const dumps = readdirSync(inst.dir)
    .map((f) => /^callgrind\.out\.\d+\.(\d+)$/.exec(f))
    .filter((m): m is RegExpExecArray => m !== null)
    .sort((a, b) => Number(a[1]) - Number(b[1]));
  const last = dumps.at(-1)?.[0];
  if (!last) throw new Error(`no callgrind dump in ${inst.dir}`);
  if (KEEP) {
    mkdirSync(KEEP, { recursive: true });
    copyFileSync(join(inst.dir, last), join(KEEP, `${name}.callgrind`));
  }
  if (BY_MECHANISM) mechanisms.set(name, byMechanism(join(inst.dir, last)));
  const m = /^(?:summary|totals):\s+(\d+)/m.exec(readFileSync(join(inst.dir, last), "utf8"));
  if (!m) throw new Error(`no instruction total in ${last}`);
  return Number(m[1]);
}

async function measure(name: Case, prepare: (url: string) => Promise<(n: number) => Promise<void>>): Promise<number> {
  if (ONLY.length > 0 && !ONLY.includes(name)) return Number.NaN;
  const inst = await startUnderCallgrind();
  try {
    const run = await prepare(inst.url);
    await run(BATCH); // warm-up: connections, scripts loaded, keys created
    control("-z", inst.pid);
    await run(EVENTS);
    control("-d", inst.pid);
    const instructions = lastDumpInstructions(inst, name);
    process.stderr.write(`${name}: ${instructions.toLocaleString("en-US")} instructions for ${EVENTS} events\n`);
    return instructions / EVENTS;
  } finally {
    await inst.stop();
    rmSync(inst.dir, { recursive: true, force: true });
  }
}

let seq = 0;
/** The same shape and size as bench:ingest's events. */
const event = (n: number) => ({
  id: `ev-${n}`,
  type: "bench.event",
  correlationId: `c-${n % 10_000}`,
  payload: { amount: n, note: NOTE },
});

const raw = await measure("raw", async (url) => {
  const redis = new Redis(url);
  const keys = Array.from({ length: 16 }, (_, p) => `{raw:p${p}}:s`);
  return async (n) => {
    for (let done = 0; done < n; done += BATCH) {
      const pipeline = redis.pipeline();
      for (let i = 0; i < BATCH; i++) {
        const e = event(seq++);
        pipeline.xadd(keys[i % 16] as string, "*", "e", JSON.stringify(e));
      }
      await pipeline.exec();
    }
    if (n === EVENTS) redis.disconnect();
  };
});

const ingest = await measure("ingest", async (url) => {
  const res = benchResources(url, "ri");
  await deployment(res);
  return async (n) => {
    for (let done = 0; done < n; done += INGEST_BATCH) {
      await res.store.ingest(
        "bench",
        "loader",
        Array.from({ length: INGEST_BATCH }, () => event(seq++)),
      );
    }
    if (n === EVENTS) await res.close();
  };
});

const match = await measure("match", async (url) => {
  const res = benchResources(url, "rm");
  await deployment(res);
  // each run: N waits registered and N events ingested first (not counted: the counters are
  // zeroed after the warm-up only), then the match of each event, which resolves its wait
  const pending: Array<{ partition: number; streamId: string; eventKey: string }> = [];
  const prepare = async (n: number) => {
    // --match-shape: the waits any-of two types, or count 3 (three events each: two collect, one resolves)
    const per = MATCH_SHAPE === "count-3" ? 3 : 1;
    const bases = Array.from({ length: Math.ceil(n / per) }, () => event(seq++));
    const events = bases.flatMap((e) =>
      Array.from({ length: per }, (_, k) => (k === 0 ? e : { ...e, id: `${e.id}-${k}` })),
    );
    for (const e of bases) {
      await res.store.register("bench", {
        runId: `r-${e.id}`,
        position: "p",
        correlationId: e.correlationId,
        ...(MATCH_SHAPE === "any-of" ? { eventTypes: [e.type, "bench.other"] } : { eventType: e.type }),
        ...(MATCH_SHAPE === "count-3" ? { count: 3 } : {}),
      });
    }
    for (let i = 0; i < n; i += BATCH) {
      const chunk = events.slice(i, i + BATCH);
      const results = await res.store.ingest("bench", "loader", chunk);
      results.forEach((r, j) => {
        const e = chunk[j];
        if (r.status !== "accepted" || !e) return;
        pending.push({
          partition: res.store.keys.matchPartition("bench", e.type, e.correlationId),
          streamId: r.event.streamId,
          eventKey: res.store.keys.eventKey("bench", "loader", e.id),
        });
      });
    }
  };
  await prepare(BATCH + EVENTS);
  return async (n) => {
    const batch = pending.splice(0, n);
    const byPartition = new Map<number, typeof batch>();
    for (const x of batch) byPartition.set(x.partition, [...(byPartition.get(x.partition) ?? []), x]);
    for (const [p, list] of byPartition) {
      for (let i = 0; i < list.length; i += 50) await res.store.match(p, list.slice(i, i + 50));
    }
    if (n === EVENTS) await res.close();
  };
});

const dispatch = await measure("dispatch", async (url) => {
  // one set of resolved waits per run, each under its own prefix: the warm-up hands out
  // the first, the counted run the second (both resolved before the counters are zeroed)
  const sets = new Map<number, Resources>();
  for (const n of [BATCH, EVENTS]) {
    const res = benchResources(url, `rd${n}`);
    const events = Array.from({ length: n }, () => event(seq++));
    await resolveWaits(res, events, BATCH);
    sets.set(n, res);
  }
  return async (n) => {
    const res = sets.get(n) as Resources;
    await dispatchAll(res, n, DISPATCH_STEP);
    await res.close();
  };
});

/**
 * The single-event ingest of `rendezvous start` (ingestEvents: the claims, then acceptEvents
 * matching what it appended), one event per call: each resolves the wait registered for it before
 * the zeroing.
 */
const accept = await measure("accept", async (url) => {
  const res = benchResources(url, "ra", { partitions: ACCEPT_PARTITIONS });
  await deployment(res);
  const events = Array.from({ length: BATCH + EVENTS }, () => event(seq++));
  await registerFor(res, events, WAIT_TIMEOUT_MS || undefined);
  await acceptLikeStart(res);
  return async (n) => {
    const mine = events.splice(0, n);
    for (let i = 0; i < mine.length; i += ACCEPT_BATCH) {
      await res.store.ingest("bench", "loader", mine.slice(i, i + ACCEPT_BATCH));
    }
    if (n === EVENTS) await res.close();
  };
});

/**
 * The accept case with the continuation jobs added in the same call (ingestDispatchEvents:
 * `rendezvous start`, a dispatcher in the process): each event resolves its wait, whose job,
 * continuation_dispatched entry and outbox ack the call writes too.
 */
const acceptJobs = await measure("accept-jobs", async (url) => {
  const res = benchResources(url, "rj", { partitions: ACCEPT_PARTITIONS });
  await deployment(res);
  const events = Array.from({ length: BATCH + EVENTS }, () => event(seq++));
  await registerFor(res, events, WAIT_TIMEOUT_MS || undefined);
  await acceptLikeStartWithJobs(res, "bench");
  return async (n) => {
    const mine = events.splice(0, n);
    for (let i = 0; i < mine.length; i += ACCEPT_BATCH) {
      await res.store.ingest("bench", "loader", mine.slice(i, i + ACCEPT_BATCH));
    }
    if (n === EVENTS) await res.close();
  };
});

const quota = await measure("quota", async (url) => {
  const res = createResources({
    redisUrl: url,
    prefix: "rq",
    config: parseConfig({
      partitions: 16,
      quotas: { bufferedEvents: 1e9, producerEventsPerSec: 1e9 },
      tenants: { bench: { producers: { loader: { keys: ["k"], eventTypes: ["bench.*"], rateLimitPerSec: 1e9 } } } },
    }),
    logger: pino({ level: "silent" }),
  });
  const producer = { id: "loader", perSec: 1e9 };
  return async (n) => {
    // one request at a time, as single sends are checked (the API awaits each check)
    for (let i = 0; i < n; i++) {
      const refusal = await res.store.quotas.check({
        tenant: "bench",
        count: "bufferedEvents",
        rate: "producerEventsPerSec",
        producer,
      });
      if (refusal !== null) throw new Error(`quota check refused: ${JSON.stringify(refusal)}`);
    }
    if (n === EVENTS) await res.close();
  };
});

/** A Wait-sized job (the dispatcher's data is the settled Wait, ~1 KB). */
const WAIT_DATA = { id: "", tenant: "bench", state: "resolved", note: "w".repeat(900) };
const QUEUE = "continuations.bench";

/** `n` continuation jobs added under `prefix` (as the dispatcher adds them), and (`work`) a worker that completes them. */
async function completeJobs(url: string, prefix: string, n: number, keep: boolean, work = true): Promise<void> {
  const connection = new Redis(url, { maxRetriesPerRequest: null });
  const queue = new Queue(QUEUE, { connection, prefix });
  for (let i = 0; i < n; i += ADD_STEP) {
    const jobs = Array.from({ length: Math.min(ADD_STEP, n - i) }, (_, j) => ({
      name: "continuation",
      data: { ...WAIT_DATA, id: `w${i + j}` },
      opts: {
        jobId: `w${i + j}`,
        removeOnComplete: keep ? false : { age: 86_400 },
        removeOnFail: { age: 7 * 86_400 },
      },
    }));
    if (ADD_BULK) await queue.addBulk(jobs);
    else await addStepJobs(queue, connection, jobs, console.warn);
  }
  if (!work) {
    await queue.close();
    connection.disconnect();
    return;
  }
  let done = 0;
  let finish: () => void = () => {};
  const all = new Promise<void>((r) => {
    finish = r;
  });
  const worker = new Worker(QUEUE, async () => undefined, { connection, prefix, concurrency: 50, autorun: false });
  worker.on("completed", () => {
    if (++done === n) finish();
  });
  void worker.run();
  await all;
  await worker.close();
  await queue.close();
  connection.disconnect();
}

/**
 * The add and the completion of N jobs, both counted (the two cases differ only in
 * `removeOnComplete`, so their difference is BullMQ's look for jobs past the age).
 */
const completeCase = (keep: boolean) => async (url: string) => async (n: number) =>
  completeJobs(url, `rc${keep ? "k" : "a"}${n}`, n, keep);
const add = await measure("add", async (url) => async (n) => completeJobs(url, `ra${n}`, n, false, false));
const complete = await measure("complete", completeCase(false));
const completeKeep = await measure("complete-keep", completeCase(true));

const compact = await measure("compact", async (url) => {
  // completed jobs under a prefix per run (the warm-up's, the counted run's), made before the zeroing
  for (const n of [BATCH, EVENTS]) await completeJobs(url, `rz${n}`, n, false);
  const redis = new Redis(url);
  return async (n) => {
    for (;;) {
      const [r] = await compactContinuations(redis, `rz${n}`, [QUEUE], Date.now(), COMPACT_BATCH);
      if (!r?.more) break;
    }
    if (n === EVENTS) redis.disconnect();
  };
});

/**
 * Retention as the scheduler runs it (`expireOutlived`, workers/src/retention.ts): the
 * records of N events that each resolved a wait (the settled wait, the event record, the
 * dedup record, the run position; ingest calls of `--ingest-batch` events), made before the
 * zeroing with a retention and dedup window of 1 s, then removed.
 */
const expire = await measure("expire", async (url) => {
  const runs = new Map<number, Resources>();
  for (const n of [BATCH, EVENTS]) {
    const res = benchResources(url, `rx${n}`, { retentionMs: 1000, dedupWindowMs: 1000 });
    await deployment(res);
    await acceptLikeStart(res);
    const events = Array.from({ length: n }, () => event(seq++));
    await registerFor(res, events);
    for (let i = 0; i < n; i += INGEST_BATCH)
      await res.store.ingest("bench", "loader", events.slice(i, i + INGEST_BATCH));
    runs.set(n, res);
  }
  await new Promise((r) => setTimeout(r, 1100));
  return async (n) => {
    const res = runs.get(n) as Resources;
    await expireOutlived(res.store, res.store.keys.allPartitions());
    if (n === EVENTS) for (const r of runs.values()) await r.close();
  };
});

/**
 * Timeouts as the scheduler fires them: N due waits of one tenant (16 partitions, the
 * matchers' groups caught up on a stream holding earlier events), in steps of
 * `--timeout-step` (50, the scheduler's default) through `store.timeoutMany`.
 */
const TIMEOUT_STEP = args.number("timeout-step", 50);
const timeout = await measure("timeout", async (url) => {
  const res = benchResources(url, "rt");
  await deployment(res);
  await acceptLikeStart(res);
  // the streams hold accepted events (none of them due waits' own), matched as they were
  // appended (calls small enough to match in the script), as a live deployment's are
  for (let i = 0; i < BATCH; i += 10) {
    await res.store.ingest(
      "bench",
      "loader",
      Array.from({ length: 10 }, () => ({ ...event(seq++), type: "bench.other" })),
    );
  }
  const due = new Map<number, string[]>();
  for (const n of [BATCH, EVENTS]) {
    const ids: string[] = [];
    for (let i = 0; i < n; i++) {
      const e = event(seq++);
      const { wait } = await res.store.register("bench", {
        runId: `r-${e.id}`,
        position: "p",
        eventType: e.type,
        correlationId: e.correlationId,
        timeoutMs: 1,
      });
      ids.push(wait.id);
    }
    // in partition order, as the scheduler's read of the due waits gives them
    ids.sort((a, b) => (res.store.keys.waitPartition(a) ?? 0) - (res.store.keys.waitPartition(b) ?? 0));
    due.set(n, ids);
  }
  await new Promise((r) => setTimeout(r, 5));
  return async (n) => {
    const ids = due.get(n) as string[];
    for (let i = 0; i < ids.length; i += TIMEOUT_STEP) {
      const results = await res.store.timeoutMany(ids.slice(i, i + TIMEOUT_STEP));
      const missed = results.find((r) => r.outcome !== "timed_out");
      if (missed) throw new Error(`timeout case: a wait was not timed out: ${JSON.stringify(missed)}`);
    }
    if (n === EVENTS) await res.close();
  };
});

/**
 * Registration (claimRunPosition, then registerWait) of N waits through store.register,
 * one at a time, each with timeoutMs `--wait-timeout-ms` (default 1 h: parked, lua/includes/
 * parked-deadlines.lua; 60000 puts the deadline in the deadline index; 0 registers none).
 */
const register = await measure("register", async (url) => {
  const res = benchResources(url, "rr");
  await deployment(res);
  return async (n) => {
    await registerFor(
      res,
      Array.from({ length: n }, () => event(seq++)),
      WAIT_TIMEOUT_MS || undefined,
    );
    if (n === EVENTS) await res.close();
  };
});

/**
 * The sweep's promotion of N parked deadlines (registered with `--wait-timeout-ms` before
 * the zeroing) into the deadline index: promoteDeadlines over 16 partitions, calls of 500.
 */
const promote = await measure("promote", async (url) => {
  const res = benchResources(url, "rp");
  await deployment(res);
  const all = res.store.keys.allPartitions();
  const registerDue = async (n: number, timeoutMs: number) => {
    for (let i = 0; i < n; i++) {
      const e = event(seq++);
      await res.store.register("bench", {
        runId: `r-${e.id}`,
        position: "p",
        eventType: e.type,
        correlationId: e.correlationId,
        timeoutMs,
      });
    }
  };
  // the warm-up's waits 1.5 h ahead; the measured run's 3 h ahead, registered by the
  // warm-up after its promotion (before the zeroing)
  await registerDue(BATCH, 1.5 * 3_600_000);
  return async (n) => {
    const reach = n === BATCH ? 2 * 3_600_000 : 4 * 3_600_000;
    const { promoted, more } = await res.store.promoteMany(all, reach, 1000);
    if (promoted !== n || more) throw new Error(`promote case: promoted ${promoted} of ${n}`);
    if (n === BATCH) await registerDue(EVENTS, 3 * 3_600_000);
    else await res.close();
  };
});

const count = (n: number) => (Number.isNaN(n) ? "-" : Math.round(n).toLocaleString("en-US"));
console.log(
  `\nRedis instructions per event (callgrind, ${EVENTS} events, AOF everysec${LEGACY_INDEX ? ", legacy index layout" : ""})`,
);
console.log(`raw XADD (pipelined)            ${count(raw)}`);
console.log(`store.ingest (batches of ${INGEST_BATCH})   ${count(ingest)}`);
console.log(`ratio ingest / XADD             ${(ingest / raw).toFixed(2)}`);
console.log(`store.match (${MATCH_SHAPE === "one" ? "resolves one wait" : `${MATCH_SHAPE} waits`}) ${count(match)}`);
console.log(`dispatch (one resolved wait)    ${count(dispatch)}`);
console.log(
  `accept, ${ACCEPT_BATCH === 1 ? "one event" : `${ACCEPT_BATCH} events`} per call (claims + acceptEvents, resolves one wait) ${count(accept)}`,
);
console.log(
  `accept with its jobs, ${ACCEPT_BATCH === 1 ? "one event" : `${ACCEPT_BATCH} events`} per call (ingestDispatchEvents: + the job, continuation_dispatched, the ack) ${count(acceptJobs)}`,
);
console.log(`quota check (one request)      ${count(quota)}`);
console.log(`job add (${ADD_BULK ? "addBulk" : "the dispatcher's calls"}, steps of ${ADD_STEP})        ${count(add)}`);
console.log(`job add + complete, age removal ${count(complete)}`);
console.log(`job add + complete, kept        ${count(completeKeep)}`);
console.log(`compaction (one completed job, calls of ${COMPACT_BATCH})  ${count(compact)}`);
console.log(`retention (one resolved event's records, ingest calls of ${INGEST_BATCH}) ${count(expire)}`);
console.log(`timeout (one due wait, steps of ${TIMEOUT_STEP}) ${count(timeout)}`);
console.log(`register (one wait, timeoutMs ${WAIT_TIMEOUT_MS || "none"}) ${count(register)}`);
console.log(`promote (one parked deadline into the deadline index) ${count(promote)}`);

// A resolved event of `rendezvous start` by who makes Redis do the work: the product's own
// transitions (the accept, its dispatch step less the job adds, the later compaction),
// BullMQ's job add (the product runs it), and the host's BullMQ worker taking and completing
// the job (the complete case less its adds).
const owners: Array<[string, number]> = [
  ["the product's transitions (accept + dispatch step's own + compaction)", accept + (dispatch - add) + compact],
  ["BullMQ's job add (in the product's dispatch step)", add],
  ["the host's BullMQ worker (take and complete)", complete - add],
];
if (owners.every(([, n]) => !Number.isNaN(n))) {
  const total = owners.reduce((sum, [, n]) => sum + n, 0);
  console.log(
    `\na resolved event by owner (accept ${ACCEPT_BATCH} per call, ${ACCEPT_PARTITIONS} partitions; compaction in calls of ${COMPACT_BATCH}): ${count(total)}`,
  );
  for (const [who, n] of owners)
    console.log(`  ${who.padEnd(72)} ${count(n).padStart(9)}  ${((100 * n) / total).toFixed(0)} %`);
}

for (const [name, rows] of mechanisms) {
  if (rows === null) {
    console.log(
      `\n${name}: redis-server has no symbols, no mechanisms (a build with them first on PATH: docs/benchmarks.md)`,
    );
    continue;
  }
  const total = rows.reduce((sum, r) => sum + r.instructions, 0);
  console.log(`\n${name} by mechanism (instructions per event, each function's own):`);
  for (const r of rows)
    console.log(
      `  ${r.name.padEnd(86)} ${count(r.instructions / EVENTS).padStart(9)}  ${((100 * r.instructions) / total).toFixed(1).padStart(4)} %`,
    );
}
