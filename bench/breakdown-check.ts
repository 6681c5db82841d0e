/**
 * A check of bench:blackbox's instruments against a real redis-server and a real Node
 * profile (not a benchmark): `npx tsx --tsconfig tsconfig.source.json bench/breakdown-check.ts`.
 * Exits 1 naming what failed.
 *
 * - the SLOWLOG layout (bench/lib/redis-breakdown.ts): a plain command, a script with the
 *   commands it runs counted inside it, each command of a MULTI, none counted twice; the client's address matched to this process; the log's total equal to
 *   commandstats'; the product's and BullMQ's SHA1s named;
 * - the profile window (bench/lib/cpu-profile.ts): a child under --cpu-prof spinning on
 *   JSON.stringify; its samples fall inside the driver's CLOCK_MONOTONIC window around it,
 *   none in a window before it started, and the loop calling JSON.stringify has most of them
 *   (a builtin's time is its caller's).
 */
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { luaScripts, startRedisServer } from "@rendezvous/engine";
import { Redis } from "ioredis";
import { profileFile, summarizeProfile } from "./lib/cpu-profile.js";
import { monotonicUs } from "./lib/product.js";
import { nameOf, socketOwners, startBreakdown } from "./lib/redis-breakdown.js";

const failures: string[] = [];
const expect = (ok: boolean, what: string) => {
  if (!ok) failures.push(what);
  process.stderr.write(`${ok ? "ok  " : "FAIL"} ${what}\n`);
};

const server = await startRedisServer({});
const redis = new Redis(server.url);
try {
  const finish = await startBreakdown(redis, 10_000);
  await redis.set("a", "1");
  await redis.eval("redis.call('set', 'b', '2'); redis.call('get', 'b'); return 1", 0);
  await redis.multi().set("c", "3").get("c").exec();
  const owners = socketOwners({ self: process.pid }, server.port);
  const b = await finish(owners);
  const unit = (name: string) => b.units.find((u) => u.name === name);
  expect(unit("SET")?.process === "self", "the connection's commands: of this process");
  const script = unit("EVAL ?");
  expect(script?.calls === 1 && (script?.innerUsec ?? 0) > 0, "a script: one unit, its SET and GET counted inside it");
  expect(script !== undefined && script.innerUsec <= script.usec, "a script's inner time within its own");
  expect(unit("SET")?.calls === 2 && unit("GET")?.calls === 1, "each command of a MULTI a unit (and the plain SET)");
  expect(unit("MULTI")?.calls === 1 && !unit("EXEC"), "MULTI a unit of its own, EXEC none (its commands are)");
  expect(
    Math.abs(b.loggedUsec - b.commandstatsUsec) <= 2,
    `the log's µs (${b.loggedUsec}) = commandstats' (${b.commandstatsUsec}), EXEC left out of both`,
  );
  expect(b.usec < b.loggedUsec, "units' sum below the log's (a script's commands counted once)");
  const [, threshold] = (await redis.config("GET", "slowlog-log-slower-than")) as [string, string];
  expect(threshold === "10000", `slowlog-log-slower-than restored (${threshold})`);
  const sha = (lua: string) => createHash("sha1").update(lua).digest("hex");
  expect(nameOf(["EVALSHA", sha(luaScripts.matchEvent.lua)]).name === "matchEvent", "our script named by its SHA1");
  const bull = createRequire(import.meta.url)("bullmq/dist/cjs/scripts/index.js") as Record<
    string,
    { name: string; content: string }
  >;
  const moveToActive = Object.values(bull).find((s) => s.name === "moveToActive");
  expect(
    moveToActive !== undefined && nameOf(["evalsha", sha(moveToActive.content)]).name === "bullmq moveToActive",
    "BullMQ's script named by its SHA1",
  );
} finally {
  redis.disconnect();
  await server.stop();
}

const dir = mkdtempSync(join(tmpdir(), "rdv-profile-check-"));
try {
  const before = monotonicUs();
  await new Promise((r) => setTimeout(r, 50));
  const from = monotonicUs();
  const child = spawnSync(
    process.execPath,
    [
      "--cpu-prof",
      "--cpu-prof-dir",
      dir,
      "--cpu-prof-interval",
      "200",
      "-e",
      "const o={a:Array.from({length:2000},(_,i)=>({i,s:'x'}))};const end=Date.now()+400;let n=0;while(Date.now()<end)n+=JSON.stringify(o).length;",
    ],
    { encoding: "utf8" },
  );
  const to = monotonicUs();
  expect(child.status === 0, "the profiled child ran");
  const file = profileFile(dir, child.pid as number);
  expect(file !== undefined, "its profile is found by its pid");
  if (file) {
    const inside = summarizeProfile(file, from, to);
    const outside = summarizeProfile(file, 0, before);
    expect(inside.samples > 100, `samples inside the driver's window (${inside.samples})`);
    expect(outside.samples === 0, `none before the child started (${outside.samples})`);
    // JSON.stringify is no frame of its own in V8's profiles: its time is its caller's (`[eval]`: other)
    const top = inside.categories.find((c) => c.category !== "idle");
    expect(
      top?.category === "other" && top.ms > inside.sampledMs / 2,
      `the caller of JSON.stringify the largest (${top?.category})`,
    );
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}

if (failures.length > 0) {
  console.error(`${failures.length} check(s) failed`);
  process.exit(1);
}
console.log("breakdown checks: all passed");
