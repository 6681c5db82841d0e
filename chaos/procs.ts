/**
 * The processes of a chaos run: one private redis-server (AOF, `appendfsync always`)
 * that can be killed and restarted on the same port and dir, and the rendezvous roles
 * as separate CLI processes (SIGKILLed and restarted by the fault injector). Every
 * process is started here and stopped by its PID; their output goes to log files.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { createWriteStream, type WriteStream } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { freePort, type RedisServer, startRedisServer } from "@rendezvous/engine";
import { refuseStaleBuild } from "../bench/lib/product.js";

const bin = fileURLToPath(new URL("../packages/server/bin/rendezvous.js", import.meta.url));

export interface FaultRecord {
  /** local time (ms) */
  at: number;
  what: "kill" | "restart" | "redis_kill" | "redis_restart" | "redis_term";
  target: string;
  pid?: number;
}

/** A private Redis that survives its own restarts: same port, same dir, same AOF. */
export class ChaosRedis {
  #server?: RedisServer;
  constructor(
    readonly dir: string,
    readonly port: number,
    readonly fsync: "always" | "everysec",
  ) {}

  static async start(dir: string, fsync: "always" | "everysec" = "always"): Promise<ChaosRedis> {
    const r = new ChaosRedis(dir, await freePort(), fsync);
    await r.up();
    return r;
  }

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  get pid(): number | undefined {
    return this.#server?.pid;
  }

  async up(): Promise<void> {
    this.#server = await startRedisServer({ dir: this.dir, port: this.port, aof: true, fsync: this.fsync });
  }

  /** SIGKILL (a crash: only what AOF fsynced survives) or SIGTERM (clean stop). */
  async down(how: "kill" | "term"): Promise<void> {
    const s = this.#server;
    this.#server = undefined;
    if (!s) return;
    if (how === "kill") await s.kill();
    else await s.stop(); // our dir: stop() keeps it
  }
}

export interface RoleSpec {
  /** unique name, e.g. matcher-1 */
  name: string;
  /** CLI command: api | matcher | scheduler | dispatcher */
  role: string;
  /** fixed port (the api, so clients find it again after a restart); 0 = free */
  port: number;
}

/** One role process, restartable. */
export class RoleProcess {
  #child?: ChildProcess;
  #log: WriteStream;
  #exited?: Promise<void>;
  #killing = false;
  starts = 0;
  /** exits nobody asked for (a crash of its own): local time and code/signal */
  readonly unexpectedExits: Array<{ at: number; how: string }> = [];

  constructor(
    readonly spec: RoleSpec,
    readonly env: Record<string, string>,
    readonly args: string[],
    logDir: string,
  ) {
    this.#log = createWriteStream(join(logDir, `${spec.name}.log`), { flags: "a" });
  }

  get pid(): number | undefined {
    return this.#child?.pid;
  }

  get alive(): boolean {
    return !!this.#child && this.#child.exitCode === null && this.#child.signalCode === null;
  }

  /**
   * Starts the process and resolves once it listens. The bound is generous: five roles
   * compiling their TypeScript sources at once on a loaded 2-core machine took over 60 s.
   */
  async start(timeoutMs = 180_000): Promise<void> {
    const env = { ...process.env, ...this.env };
    refuseStaleBuild(bin, env);
    const child = spawn(process.execPath, [bin, this.spec.role, ...this.args, "--port", String(this.spec.port)], {
      env,
      stdio: ["ignore", "pipe", "pipe"],
    });
    this.#child = child;
    this.#killing = false;
    this.starts++;
    this.#log.write(`\n=== start ${new Date().toISOString()} pid ${child.pid}\n`);
    let out = "";
    const listening = new Promise<void>((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`${this.spec.name} did not listen in ${timeoutMs} ms`)),
        timeoutMs,
      );
      const onData = (d: Buffer) => {
        this.#log.write(d);
        if (out.length < 100_000) out += d.toString();
        if (/listening on http/.test(out)) {
          clearTimeout(timer);
          resolve();
        }
      };
      child.stdout?.on("data", onData);
      child.stderr?.on("data", onData);
      child.once("exit", (code, signal) => {
        clearTimeout(timer);
        reject(new Error(`${this.spec.name} exited (${code ?? signal}) before listening:\n${out.slice(-2000)}`));
      });
    });
    this.#exited = new Promise((resolve) =>
      child.once("exit", (code, signal) => {
        this.#log.write(`=== exit ${new Date().toISOString()} pid ${child.pid} ${code ?? signal}\n`);
        if (!this.#killing) this.unexpectedExits.push({ at: Date.now(), how: String(code ?? signal) });
        resolve();
      }),
    );
    await listening;
  }

  async kill(signal: NodeJS.Signals = "SIGKILL"): Promise<void> {
    if (!this.alive) return;
    this.#killing = true;
    this.#child?.kill(signal);
    const timer = signal === "SIGKILL" ? undefined : setTimeout(() => this.#child?.kill("SIGKILL"), 15_000);
    await this.#exited;
    if (timer) clearTimeout(timer);
  }

  /** Starts it again until it listens (a start can fail while Redis is down: retry). */
  async restart(): Promise<void> {
    for (let n = 0; ; n++) {
      try {
        await this.start();
        return;
      } catch (err) {
        await this.kill();
        if (n >= 5) throw err;
        await new Promise((r) => setTimeout(r, 1000));
      }
    }
  }

  close(): void {
    this.#log.end();
  }
}
