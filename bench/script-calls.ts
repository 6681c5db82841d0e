/**
 * Micro-benchmark of the engine's Redis call path: Node CPU per script call for single
 * calls (`runScript` on the connection, 64 in flight, as EngineContext.run) and for
 * pipelines of 10 and 100 calls (`execBatch`, and `EngineContext.runAll` as the Store
 * runs a batch of scripts; 8 in flight), beside a reference
 * (ioredis defineCommand, see defineCommandRunner), against a private
 * redis-server (no AOF). The script is deliverCandidates on an empty partition (read
 * only, one ZRANGE): the Redis side stays small, so the Node side dominates. It also
 * counts the commands Redis ran per call (INFO commandstats: EVALSHA + EVAL) and the
 * socket writes per call (net.Socket write/writev calls on the connection).
 *
 *   tsx --tsconfig tsconfig.source.json bench/script-calls.ts [--calls 40000] [--rounds 3]
 */
import {
  type BatchCommand,
  createRedis,
  execBatch,
  KeyLayout,
  luaScripts,
  parseConfig,
  startRedisServer,
} from "@rendezvous/engine";
import type { Redis } from "ioredis";
import { EngineContext } from "../packages/engine/src/engine-context.js";
import { deliverCandidatesCall } from "../packages/engine/src/transitions/deliverCandidates.js";
import { type Commander, runScript, type ScriptCall } from "../packages/engine/src/transitions/run.js";

function arg(name: string, fallback: number): number {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : fallback;
}

const CALLS = arg("calls", 40_000);
const ROUNDS = arg("rounds", 3);

async function scriptCommands(redis: Redis): Promise<number> {
  const text = await redis.info("commandstats");
  let calls = 0;
  for (const m of text.matchAll(/^cmdstat_(evalsha|eval):calls=(\d+)/gm)) calls += Number(m[2]);
  return calls;
}

/** Counts the write/writev calls on a socket (how many times the client hands bytes to it). */
function countWrites(redis: Redis): () => number {
  const stream = redis.stream as unknown as { _write: unknown; _writev: unknown; __writes?: number };
  const s = stream as unknown as Record<string, (...a: unknown[]) => unknown>;
  const write = s._write as (...a: unknown[]) => unknown;
  const writev = s._writev as ((...a: unknown[]) => unknown) | undefined;
  let n = 0;
  s._write = function (this: unknown, ...a: unknown[]) {
    n++;
    return write.apply(this, a);
  };
  if (writev) {
    s._writev = function (this: unknown, ...a: unknown[]) {
      n++;
      return writev.apply(this, a);
    };
  }
  return () => n;
}

/** How a variant queues one call: on the connection (await it) or on a pipeline. */
type Runner = (target: Commander, call: ScriptCall) => Promise<unknown>;

/**
 * The reference the engine is measured against, in the same process and interleaved
 * with it (so load from elsewhere hits both alike): every script registered with
 * ioredis defineCommand on its connection (EVALSHA with EVAL fallback, each pipeline
 * copying the registered scripts) and called by name.
 */
function defineCommandRunner(redis: Redis): Runner {
  for (const def of Object.values(luaScripts)) {
    redis.defineCommand(def.command, { numberOfKeys: def.numberOfKeys, lua: def.lua });
  }
  return (target, call) => {
    const fn = (target as unknown as Record<string, (...a: unknown[]) => Promise<unknown>>)[
      luaScripts[call.script].command
    ] as (...a: unknown[]) => Promise<unknown>;
    return fn.call(target, ...call.keys, ...call.args);
  };
}

interface Variant {
  name: string;
  redis: Redis;
  run: Runner;
  writes: () => number;
  /** how a batch of calls is run: one execBatch (default), or as the Store does */
  batch?: (calls: ScriptCall[]) => Promise<unknown>;
}

interface Row {
  mode: string;
  variant: string;
  usPerCall: number[];
  commandsPerCall: number;
  writesPerCall: number;
}

async function main(): Promise<void> {
  const server = await startRedisServer({ aof: false });
  const engine = createRedis(server.url, { name: "bench:engine" }) as Redis;
  const legacy = createRedis(server.url, { name: "bench:defineCommand" }) as Redis;
  try {
    const keys = new KeyLayout("bench", 16);
    const call = (p: number): ScriptCall =>
      deliverCandidatesCall(keys.partition(p % 16), {
        indexPrefix: "bench\u0000t\u0000",
        legacyIndexPrefix: "AAAAAAAA",
        matchKeyPrefix: "x",
        idPrefix: "w",
        limit: 10,
      });
    await Promise.all([engine.ping(), legacy.ping()]);
    const ctx = new EngineContext(engine, keys, parseConfig({ partitions: 16 }), () => undefined);
    const engineWrites = countWrites(engine);
    const variants: Variant[] = [
      { name: "engine runScript", redis: engine, run: runScript, writes: engineWrites },
      {
        name: "engine EngineContext.runAll",
        redis: engine,
        run: runScript,
        writes: engineWrites,
        batch: (calls) => ctx.runAll(calls),
      },
      {
        name: "defineCommand (reference)",
        redis: legacy,
        run: defineCommandRunner(legacy),
        writes: countWrites(legacy),
      },
    ];

    const single = (v: Variant) => async (): Promise<void> => {
      let left = CALLS;
      const worker = async (): Promise<void> => {
        while (left-- > 0) await v.run(v.redis, call(left));
      };
      await Promise.all(Array.from({ length: 64 }, worker));
    };
    const batched = (size: number) => (v: Variant) => async (): Promise<void> => {
      let left = CALLS / size;
      const worker = async (): Promise<void> => {
        while (left-- > 0) {
          if (v.batch) {
            await v.batch(Array.from({ length: size }, (_, i) => call(i)));
            continue;
          }
          const commands: BatchCommand[] = Array.from({ length: size }, (_, i) => {
            const c = call(i);
            return { key: c.keys[0] ?? null, add: (pipeline) => void v.run(pipeline, c) };
          });
          const replies = await execBatch(v.redis, commands);
          for (const [err] of replies) if (err) throw err;
        }
      };
      await Promise.all(Array.from({ length: 8 }, worker));
    };
    const modes: Array<[string, (v: Variant) => () => Promise<void>]> = [
      ["single, 64 in flight", single],
      ["pipelines of 10, 8 in flight", batched(10)],
      ["pipelines of 100, 8 in flight", batched(100)],
    ];

    const rows: Row[] = [];
    for (const [mode, work] of modes) {
      const byVariant = variants.map((v) => ({
        v,
        row: { mode, variant: v.name, usPerCall: [] as number[], commandsPerCall: 0, writesPerCall: 0 },
      }));
      for (const { v } of byVariant) await work(v)(); // warm-up
      for (let r = 0; r < ROUNDS; r++) {
        for (const { v, row } of byVariant) {
          const c0 = await scriptCommands(engine);
          const w0 = v.writes();
          const t0 = process.cpuUsage();
          await work(v)();
          const t = process.cpuUsage(t0);
          const w = v.writes() - w0;
          const c = (await scriptCommands(engine)) - c0;
          row.usPerCall.push((t.user + t.system) / CALLS);
          row.commandsPerCall = c / CALLS;
          row.writesPerCall = w / CALLS;
        }
      }
      rows.push(...byVariant.map((b) => b.row));
    }
    const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;
    console.log(`${CALLS} calls per round, ${ROUNDS} rounds, variants interleaved (Node CPU µs per call)`);
    console.log("| mode | variant | Node CPU µs/call (median) | min | EVAL(SHA) per call | socket writes per call |");
    console.log("| --- | --- | --- | --- | --- | --- |");
    for (const r of rows) {
      console.log(
        `| ${r.mode} | ${r.variant} | ${median(r.usPerCall).toFixed(2)} | ${Math.min(...r.usPerCall).toFixed(2)} | ${r.commandsPerCall.toFixed(3)} | ${r.writesPerCall.toFixed(3)} |`,
      );
    }
  } finally {
    engine.disconnect();
    legacy.disconnect();
    await server.stop();
  }
}

await main();
