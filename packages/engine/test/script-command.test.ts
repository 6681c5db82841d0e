import { Command } from "ioredis";
import { describe, expect, it } from "vitest";
import { createRedis, startRedisServer } from "../src/index.js";
import { foreignScript } from "../src/transitions/run.js";
import { encodeCommand } from "../src/transitions/script-command.js";

/** The bytes ioredis itself would write for the command. */
function ioredisBytes(name: string, args: Array<string | number | Buffer>): Buffer {
  const w = new Command(name, args).toWritable({});
  return typeof w === "string" ? Buffer.from(w, "utf8") : w;
}

function ours(name: string, args: Array<string | number | Buffer>): Buffer {
  const c = new Command(name, args);
  const w = encodeCommand(c.name, c.args as Array<string | Buffer>);
  return typeof w === "string" ? Buffer.from(w, "utf8") : w;
}

describe("encodeCommand", () => {
  it("writes the bytes ioredis writes: text only, Buffers among text, Buffers first and last, empty ones, non-ASCII", () => {
    const cases: Array<Array<string | number | Buffer>> = [
      [],
      ["k1", "", "v", 12, "ünïcødé ✓ 🦀"],
      [Buffer.from([0, 1, 2, 255]), "a", "b"],
      ["a", Buffer.alloc(0), "", Buffer.from("é", "utf8"), "z"],
      ["x", Buffer.from([13, 10, 36, 42])],
      [Buffer.alloc(5000, 7), "🦀".repeat(1000), Buffer.alloc(1, 9)],
    ];
    for (const args of cases) expect(ours("evalsha", args).equals(ioredisBytes("evalsha", args))).toBe(true);
  });

  it("gives text where every argument is text (ioredis writes it as it does its own)", () => {
    expect(typeof encodeCommand("evalsha", ["a", "b"])).toBe("string");
    expect(Buffer.isBuffer(encodeCommand("evalsha", ["a", Buffer.from("b")]))).toBe(true);
  });
});

describe("LuaScript on a real redis-server", () => {
  it("hands Lua the exact bytes of text and Buffer arguments, alone and in a pipeline, before and after SCRIPT FLUSH", async () => {
    const server = await startRedisServer();
    const redis = createRedis(server.url, { name: "t-script-command" });
    try {
      // each argument's length in bytes and its bytes as hex, then the key
      const echo = foreignScript(
        "local out = { KEYS[1] } for i = 1, #ARGV do local a = ARGV[i] out[#out + 1] = #a .. ':' .. (a:gsub('.', function(c) return string.format('%02x', c:byte()) end)) end return out",
        1,
      );
      const args = ["ünï ✓", Buffer.from([0, 13, 10, 255]), "", Buffer.alloc(0), "plain"];
      const expected = [
        "k",
        ...args.map((a) => {
          const b = typeof a === "string" ? Buffer.from(a, "utf8") : a;
          return `${b.length}:${b.toString("hex")}`;
        }),
      ];
      expect(await echo(redis, ["k"], args)).toEqual(expected);
      expect(await echo(redis, ["k"], args)).toEqual(expected);
      await redis.script("FLUSH");
      expect(await echo(redis, ["k"], args)).toEqual(expected);
      const pipeline = redis.pipeline();
      void echo(pipeline as never, ["k"], args);
      await redis.script("FLUSH");
      expect(await pipeline.exec()).toEqual([[null, expected]]);
    } finally {
      redis.disconnect();
      await server.stop();
    }
  });
});
