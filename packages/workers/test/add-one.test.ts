/**
 * BullMQ's addStandardJob as `addOne(KEYS, ARGV)` with its helpers made once per call
 * (add-one.ts): every helper of the installed bullmq's script moves, each with its text
 * unchanged; a helper moves only where that cannot change what the text does; and a
 * text's function gives the same replies either way, run by a real redis-server.
 */
import { createRequire } from "node:module";
import { type RedisServer, startRedisServer } from "@rendezvous/engine";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { addOneLua, movableHelpers } from "../src/add-one.js";

const { addStandardJob } = createRequire(import.meta.url)("bullmq/dist/cjs/scripts/addStandardJob-9.js") as {
  addStandardJob: { content: string };
};

/** The names of the helpers of `text` that move, in order. */
const moved = (text: string) =>
  movableHelpers(text).map(([start, end]) => /^local function (\w+)/.exec(text.slice(start, end))?.[1]);

let server: RedisServer;
let conn: Redis;
beforeAll(async () => {
  server = await startRedisServer();
  conn = new Redis(server.url);
});
afterAll(async () => {
  conn.disconnect();
  await server.stop();
});

/** `text` run as addOne, plainly and with its helpers moved, on the same keys and arguments: both replies. */
async function both(text: string, keys: string[], args: string[]): Promise<[unknown, unknown]> {
  const call = (addOne: string) =>
    conn.eval(`${addOne}\nreturn { addOne(KEYS, ARGV), addOne(KEYS, ARGV) }`, keys.length, ...keys, ...args);
  const plain = await call(`local function addOne(KEYS, ARGV)\n${text}\nend`);
  await conn.del(...keys);
  return [plain, await call(addOneLua(text))];
}

describe("BullMQ's addStandardJob", () => {
  const text = addStandardJob.content;

  it("moves every top-level helper, each with its text, before addOne", () => {
    const names = [...text.matchAll(/^local function (\w+)/gm)].map((m) => m[1]);
    expect(names.length).toBeGreaterThan(20);
    expect(moved(text)).toEqual(names);
    const lua = addOneLua(text);
    const body = lua.indexOf("addOne = function(KEYS, ARGV)");
    expect(body).toBeGreaterThan(0);
    for (const [start, end] of movableHelpers(text)) {
      const helper = text.slice(start, end);
      expect(lua.indexOf(helper)).toBeGreaterThan(0);
      expect(lua.indexOf(helper)).toBeLessThan(body);
      expect(lua.indexOf(helper, body)).toBe(-1);
    }
  });
});

describe("which helpers move", () => {
  it("moves a helper whose free names are rcall, moved helpers and globals; its own locals may shadow the text's", async () => {
    const text = `local key = KEYS[1]
local rcall = redis.call
local function incr(key, by) return rcall("INCRBY", key, by) end
local function twice(key, by) incr(key, 1) return incr(key, tonumber(by) or 1) end
return twice(key, ARGV[1])`;
    expect(moved(text)).toEqual(["incr", "twice"]);
    const [plain, hoisted] = await both(text, ["{t}:a"], ["5"]);
    expect(hoisted).toEqual(plain);
    expect(plain).toEqual([6, 12]);
  });

  it("keeps a helper that uses a value of the call (a top-level local, KEYS, ARGV)", async () => {
    const text = `local rcall = redis.call
local key = KEYS[1]
local function bump() return rcall("INCR", key) end
local function arg() return ARGV[1] end
local function both() return bump() .. arg() end
return both()`;
    // (both uses bump and arg, which stay: it stays too)
    expect(moved(text)).toEqual([]);
    const [plain, hoisted] = await both(text, ["{t}:b"], ["x"]);
    expect(hoisted).toEqual(plain);
  });

  it("keeps a helper that is named before its definition, assigned to, or declared twice", () => {
    expect(moved(`local rcall = redis.call\nlocal early = f\nlocal function f() return 1 end\nreturn f()`)).toEqual([]);
    expect(moved(`local function f() return 1 end\nf = nil\nreturn 1`)).toEqual([]);
    expect(moved(`local function f() return 1 end\nfunction f() return 2 end\nreturn f()`)).toEqual([]);
    expect(moved(`local function f() return 1 end\nlocal function f() return 2 end\nreturn f()`)).toEqual([]);
    // (a helper that stays names g as a global: g stays one)
    expect(
      moved(`local function f() return KEYS[1] .. tostring(g) end\nlocal function g() return 2 end\nreturn f()`),
    ).toEqual([]);
  });

  it("keeps a helper using rcall where the text's rcall is not yet, or not redis.call", () => {
    expect(
      moved(`local function f(k) return rcall("GET", k) end\nlocal rcall = redis.call\nreturn f(KEYS[1])`),
    ).toEqual([]);
    expect(
      moved(`local rcall = redis.pcall\nlocal function f(k) return rcall("GET", k) end\nreturn f(KEYS[1])`),
    ).toEqual([]);
    expect(moved(`local rcall = redis.call\nlocal function f() return 1 end\nreturn f()`)).toEqual(["f"]);
  });

  it("reads a method's self as its own, and a table's field names as no names", async () => {
    const text = `local rcall = redis.call
local function counter(key)
  local c = { key = key }
  function c:bump() return rcall("INCR", self.key) end
  return c
end
return counter(KEYS[1]):bump()`;
    expect(moved(text)).toEqual(["counter"]);
    // (a self of the text's own, or a field named like a value of the call, changes nothing)
    expect(
      moved(`local self = KEYS[1]\nlocal function f(t) function t:g() return self end return t end\nreturn 1`),
    ).toEqual(["f"]);
    expect(moved(`local self = KEYS[1]\nlocal function f() return self end\nreturn f()`)).toEqual([]);
    const [plain, hoisted] = await both(text, ["{t}:c"], []);
    expect(hoisted).toEqual(plain);
    expect(plain).toEqual([1, 2]);
  });

  it("moves nothing out of a text it cannot parse, and gives that text as the function's body", () => {
    const text = "local function f( return";
    expect(movableHelpers(text)).toEqual([]);
    expect(addOneLua(text)).toBe(`local function addOne(KEYS, ARGV)\n${text}\nend`);
  });
});
