import { readdirSync, readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { Code, KeyLayout, luaScripts } from "../src/index.js";
import { event, ingestOne, makeStore, matchOne } from "./helpers.js";

async function keysOf(h: ReturnType<typeof makeStore>): Promise<string[]> {
  // SCAN is fine in a test: it reads this test's private prefix only.
  const found: string[] = [];
  let cursor = "0";
  do {
    const [next, batch] = await h.redis.scan(cursor, "MATCH", `{${h.prefix}:*`, "COUNT", 1000);
    cursor = next;
    found.push(...batch);
  } while (cursor !== "0");
  return found.sort();
}

describe("key layout", () => {
  it("every key of the product carries a partition hash tag", async () => {
    const h = makeStore({ partitions: 4 });
    const { wait } = await h.store.register("acme", {
      runId: "r",
      position: "p",
      eventType: "job.done",
      correlationId: "j1",
      timeoutMs: 10,
    });
    await matchOne(h, await ingestOne(h, event("e1", "j1")));
    await matchOne(h, await ingestOne(h, event("e2", "j9")));
    await h.store.consume("acme", wait.id, "w");
    const keys = await keysOf(h);
    expect(keys.length).toBeGreaterThan(0);
    const pattern = new RegExp(`^\\{${h.prefix}:p[0-3]\\}:(s|o|w|iw|id|dl|dp|dp:\\d+|ib|if|e|x|r|rj)$`);
    for (const key of keys) expect(key).toMatch(pattern);
  });

  it("a pending wait costs one field, two index members and one run-index member", async () => {
    const h = makeStore({ partitions: 1 });
    await h.store.register("acme", {
      runId: "r",
      position: "p",
      eventType: "job.done",
      correlationId: "j1",
      timeoutMs: 1000,
    });
    const k = h.store.keys.partition(0);
    expect(await keysOf(h)).toEqual([k.deadlines, k.runs, k.waiting, k.waits].sort());
    expect(await h.redis.hlen(k.waits)).toBe(1);
    expect(await h.redis.zcard(k.waiting)).toBe(1);
    expect(await h.redis.zcard(k.deadlines)).toBe(1);
    expect(await h.redis.zcard(k.runs)).toBe(1);
  });

  it("a pending wait 5 minutes or more from its deadline parks it: 16 bytes of its slot's string, no deadline-index member", async () => {
    const h = makeStore({ partitions: 1 });
    const { wait } = await h.store.register("acme", {
      runId: "r",
      position: "p",
      eventType: "job.done",
      correlationId: "j1",
      timeoutMs: 3_600_000,
    });
    const k = h.store.keys.partition(0);
    const slot = Date.parse(wait.deadline ?? "") - (Date.parse(wait.deadline ?? "") % 60_000);
    expect(await keysOf(h)).toEqual([k.parked, `${k.parked}:${slot}`, k.runs, k.waiting, k.waits].sort());
    expect(await h.redis.get(`${k.parked}:${slot}`)).toBe(wait.id.slice(-16));
    expect(await h.redis.zrange(k.parked, "0", "-1", "WITHSCORES")).toEqual([String(slot), String(slot)]);
  });

  it("places match keys stably, and a wait id names its partition", () => {
    const a = new KeyLayout("rdv", 16);
    const b = new KeyLayout("rdv", 16);
    const p = a.matchPartition("acme", "order.paid", "o-1");
    expect(b.matchPartition("acme", "order.paid", "o-1")).toBe(p);
    const id = a.waitId("acme", "run", "pos", p);
    expect(a.waitPartition(id)).toBe(p);
    expect(a.waitPartition("w16.AAAAAAAAAAAAAAAA")).toBeNull();
    expect(a.waitPartition("12345")).toBeNull();
    // the length-prefixed encoding keeps look-alike tuples apart
    expect(a.matchKey("a", "b:c", "d")).not.toBe(a.matchKey("a:b", "c", "d"));
  });

  it("each script declares its key count in its file name and header", () => {
    for (const [name, def] of Object.entries(luaScripts)) {
      const declared = [...def.lua.matchAll(/^\s*KEYS\[(\d+)\]/gm)].map((m) => Number(m[1]));
      expect(Math.max(...declared), name).toBe(def.numberOfKeys);
      expect(def.lua, name).not.toMatch(/--@include/);
    }
  });

  it("the helpers marked --@inline are written at their call sites, not defined on every call", () => {
    const marked = new Set<string>();
    for (const file of ["hash-records", "event-record", "wait-record", "wait-index", "ids", "inbox", "expiry"]) {
      const lua = readFileSync(new URL(`../lua/includes/${file}.lua`, import.meta.url), "utf8");
      for (const m of lua.matchAll(/^--@inline\nlocal function ([A-Za-z_]\w*)/gm)) marked.add(m[1] as string);
    }
    expect(marked.size).toBeGreaterThan(10);
    for (const [name, def] of Object.entries(luaScripts)) {
      expect(def.lua, name).not.toMatch(/--@inline/);
      const code = def.lua.replace(/--\[\[[\s\S]*?\]\]/g, "").replace(/--.*$/gm, "");
      for (const helper of marked) expect(code, `${name}: ${helper}`).not.toMatch(new RegExp(`\\b${helper}\\b`));
    }
    // what the match script's helpers define on every call: a few closures, no table
    const helpers = luaScripts.matchEvent.lua.slice(0, luaScripts.matchEvent.lua.indexOf("local keys = {"));
    // (15: the wait shapes' matchKeyNumber and takeForShape, docs/architecture.md has their
    // cost; and matchEntryEvent, the match body that acceptEvents shares)
    expect([...helpers.matchAll(/^local function (\w+)/gm)].length).toBeLessThanOrEqual(15);
    expect(helpers).not.toMatch(/^local [\w, ]+= \{/m);
  });

  it("the Lua outcome codes mirror the TypeScript table", () => {
    // codes.lua holds the common codes; an include of one feature may add its own (tokens.lua)
    const dir = new URL("../lua/includes/", import.meta.url);
    const lua = readdirSync(dir)
      .filter((f) => f.endsWith(".lua"))
      .map((f) => readFileSync(new URL(f, dir), "utf8"))
      .join("\n");
    const found: Record<string, number> = {};
    for (const m of lua.matchAll(/^local ((?:C_[A-Z_]+,?\s*)+)=\s*([-\d,\s]+)$/gm)) {
      const names = (m[1] ?? "").split(",").map((s) => s.trim().replace(/^C_/, ""));
      const values = (m[2] ?? "").split(",").map((s) => Number(s.trim()));
      names.forEach((n, i) => {
        found[n] = values[i] as number;
      });
    }
    expect(found).toEqual({ ...Code });
  });
});
