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
 * - store.ingest: N new events in batches of 500 (the ingest transitions, 16 partitions).
 *
 * It prints instructions per event for each and their ratio. Under valgrind redis-server
 * runs some 50× slower, so N is small (default 5,000).
 */
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createResources, freePort, parseConfig } from "@rendezvous/core";
import { Redis } from "ioredis";
import { pino } from "pino";
import { parseArgs } from "./lib/args.js";

const args = parseArgs();
const EVENTS = args.number("events", 5000);
const BATCH = 500;
const NOTE = "n".repeat(120);

interface Instance {
  url: string;
  pid: number;
  dir: string;
  child: ChildProcess;
}

async function startUnderCallgrind(): Promise<Instance> {
  const dir = mkdtempSync(join(tmpdir(), "rdv-callgrind-"));
  const port = await freePort();
  const child = spawn(
    "valgrind",
    [
      "--tool=callgrind",
      `--callgrind-out-file=${join(dir, "callgrind.out.%p")}`,
      "redis-server",
      "--port",
      String(port),
      "--bind",
      "127.0.0.1",
      "--dir",
      dir,
      "--save",
      "",
      "--appendonly",
      "yes",
      "--appendfsync",
      "everysec",
    ],
    { stdio: ["ignore", "ignore", "pipe"] },
  );
  const url = `redis://127.0.0.1:${port}`;
  const probe = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
  for (let i = 0; ; i++) {
    try {
      await probe.connect();
      await probe.ping();
      break;
    } catch {
      if (i > 200) throw new Error("redis-server under valgrind did not start (is valgrind installed?)");
      probe.disconnect();
      await new Promise((r) => setTimeout(r, 200));
    }
  }
  probe.disconnect();
  return { url, pid: child.pid as number, dir, child };
}

function control(flag: "-z" | "-d", pid: number): void {
  const r = spawnSync("callgrind_control", [flag, String(pid)], { encoding: "utf8" });
  if (r.status !== 0) throw new Error(`callgrind_control ${flag}: ${r.stderr || r.stdout}`);
}

/** Instructions in the last dump of the instance (the part after the zeroing). */
function lastDumpInstructions(inst: Instance): number {
  const dumps = readdirSync(inst.dir)
    .filter((f) => f.startsWith("callgrind.out."))
    .sort((a, b) => Number(a.split(".").pop()) - Number(b.split(".").pop()));
  const last = dumps.at(-1);
  if (!last) throw new Error("no callgrind dump");
  const m = /^summary:\s+(\d+)/m.exec(readFileSync(join(inst.dir, last), "utf8"));
  if (!m) throw new Error("no summary in the callgrind dump");
  return Number(m[1]);
}

async function measure(name: string, prepare: (url: string) => Promise<(n: number) => Promise<void>>): Promise<number> {
  const inst = await startUnderCallgrind();
  try {
    const run = await prepare(inst.url);
    await run(BATCH); // warm-up: connections, scripts loaded, keys created
    control("-z", inst.pid);
    await run(EVENTS);
    control("-d", inst.pid);
    const instructions = lastDumpInstructions(inst);
    process.stderr.write(`${name}: ${instructions.toLocaleString("en-US")} instructions for ${EVENTS} events\n`);
    return instructions / EVENTS;
  } finally {
    const exited = new Promise((r) => inst.child.once("exit", r));
    inst.child.kill("SIGTERM");
    await exited;
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

const raw = await measure("raw XADD", async (url) => {
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

const ingest = await measure("store.ingest", async (url) => {
  const res = createResources({
    redisUrl: url,
    prefix: "ri",
    config: parseConfig({ partitions: 16 }),
    logger: pino({ level: "silent" }),
  });
  return async (n) => {
    for (let done = 0; done < n; done += BATCH) {
      await res.store.ingest(
        "bench",
        "loader",
        Array.from({ length: BATCH }, () => event(seq++)),
      );
    }
    if (n === EVENTS) await res.close();
  };
});

console.log(`\nRedis instructions per event (callgrind, ${EVENTS} events, AOF everysec)`);
console.log(`raw XADD (pipelined)            ${Math.round(raw).toLocaleString("en-US")}`);
console.log(`store.ingest (batches of ${BATCH})    ${Math.round(ingest).toLocaleString("en-US")}`);
console.log(`ratio ingest / XADD             ${(ingest / raw).toFixed(2)}`);
