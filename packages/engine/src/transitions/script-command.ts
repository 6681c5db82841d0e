/**
 * A Lua script as ioredis commands. It is sent as EVALSHA by its SHA1 (computed once,
 * here), and as EVAL the first time it runs on a connection (loading it there) and after
 * a NOSCRIPT reply (the server lost its script cache: SCRIPT FLUSH, or a restart or
 * failover under the connection): that call is sent again as EVAL, alone, since NOSCRIPT
 * means the script did not run. This is what ioredis's own Script does; this one also
 * writes each call in one pass (`encodeCommand`) and hands its arguments to the Command
 * without the copy ioredis's constructor makes of them.
 */
import { createHash } from "node:crypto";
import { Command } from "ioredis";

/** A script argument: numbers go as their decimal text. */
export type ArgValue = string | number | Buffer;
/** Where a call goes: a connection, or a pipeline (which sends its commands through its connection at exec). */
interface Container {
  isPipeline?: boolean;
  redis?: unknown;
  sendCommand(command: Command): unknown;
}

/**
 * The RESP bytes of a command (an array of bulk strings: the name, then each argument).
 * All-text arguments give one string, as ioredis writes it. With Buffer arguments (a packed
 * argument, BullMQ's msgpack), the text between two Buffers is measured and written once and
 * each Buffer copied once, into one Buffer: ioredis's own encoding (MixedBuffers) measures
 * every text part twice, builds each through a concatenation of its own and makes a native
 * call per part. `npm run bench:handout` measures a call built and written both ways.
 */
export function encodeCommand(name: string, args: readonly (string | Buffer)[]): string | Buffer {
  let text = `*${args.length + 1}\r\n$${Buffer.byteLength(name)}\r\n${name}\r\n`;
  // [text, its UTF-8 length, the Buffer after it] for each Buffer argument
  const runs: Array<string | number | Buffer> = [];
  let total = 0;
  for (const arg of args) {
    if (typeof arg === "string") {
      text += `$${Buffer.byteLength(arg)}\r\n${arg}\r\n`;
      continue;
    }
    text += `$${arg.length}\r\n`;
    const bytes = Buffer.byteLength(text);
    runs.push(text, bytes, arg);
    total += bytes + arg.length;
    text = "\r\n";
  }
  if (runs.length === 0) return text;
  const last = Buffer.byteLength(text);
  const out = Buffer.allocUnsafe(total + last);
  let at = 0;
  for (let i = 0; i < runs.length; i += 3) {
    at += out.write(runs[i] as string, at, runs[i + 1] as number, "utf8");
    at += (runs[i + 2] as Buffer).copy(out, at);
  }
  out.write(text, at, last, "utf8");
  return out;
}

export class LuaScript {
  readonly sha: string;
  /** the connections (their sockets) that have loaded the script: EVALSHA there */
  readonly #loaded = new WeakSet<object>();

  /**
   * `numberOfKeys`: the keys every call has; `restKeys`: a call may have more after them
   * (the script's header ends its KEYS with a rest).
   */
  constructor(
    readonly lua: string,
    readonly numberOfKeys: number,
    readonly restKeys = false,
  ) {
    this.sha = createHash("sha1").update(lua).digest("hex");
  }

  /**
   * Sends a call (its `keys`, then its `args`) on `target`; returns what the target's
   * sendCommand returns: the reply's promise on a connection (a pipeline returns itself,
   * its replies come with exec).
   */
  execute(
    target: unknown,
    keys: readonly ArgValue[],
    args: readonly ArgValue[],
    options: Record<string, unknown>,
  ): Promise<unknown> {
    const container = target as Container;
    // as ioredis would give them to Redis: numbers as text
    const all: Array<string | Buffer> = [this.sha, String(keys.length)];
    for (const a of keys) all.push(typeof a === "number" ? String(a) : a);
    for (const a of args) all.push(typeof a === "number" ? String(a) : a);
    const command = new ScriptCommand(this, this.#loaded, all, options);
    command.promise = command.promise.catch((err: Error) => {
      if (!err.message.includes("NOSCRIPT")) throw err;
      // (its own arguments: a command rewrites its first one as it is written)
      const again = new ScriptCommand(this, this.#loaded, all.slice(), options);
      const client = (container.isPipeline ? container.redis : container) as Container;
      client.sendCommand(again);
      return again.promise;
    });
    return container.sendCommand(command) as Promise<unknown>;
  }
}

/** One call of a script: EVALSHA, or EVAL on a connection that has not loaded it. */
class ScriptCommand extends Command {
  readonly #script: LuaScript;
  readonly #loaded: WeakSet<object>;

  constructor(
    script: LuaScript,
    loaded: WeakSet<object>,
    args: Array<string | Buffer>,
    options: Record<string, unknown>,
  ) {
    // (the arguments, the command's own, are set after: Command's constructor copies them
    // through Array.prototype.flat, which costs about as much as writing them)
    super("evalsha", [], options);
    this.args = args;
    this.#script = script;
    this.#loaded = loaded;
  }

  override toWritable(socket: object): string | Buffer {
    const reject = this.reject;
    this.reject = (err: Error) => {
      // (the server lost the script: the next call on this connection loads it again)
      if (err.message.includes("NOSCRIPT")) this.#loaded.delete(socket);
      reject.call(this, err);
    };
    if (!this.#loaded.has(socket)) {
      this.#loaded.add(socket);
      this.name = "eval";
      this.args[0] = this.#script.lua;
    } else if (this.name === "eval") {
      this.name = "evalsha";
      this.args[0] = this.#script.sha;
    }
    return encodeCommand(this.name, this.args as Array<string | Buffer>);
  }
}
