/**
 * Starts and stops redis-server child processes: the embedded Redis of
 * `rendezvous start`, and the private servers of the test harness and benchmarks
 * (each on a free loopback port with its own dir, stopped by PID).
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { createConnection, createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

export interface RedisServerOptions {
  /** AOF on (`appendonly yes`) @defaultValue false */
  aof?: boolean;
  /** appendfsync policy when aof is on @defaultValue "everysec" */
  fsync?: "always" | "everysec" | "no";
  /** extra `--name value` arguments */
  args?: string[];
  /** data dir; a fresh temp dir when absent (removed on stop) */
  dir?: string;
  /** port; a free one when absent */
  port?: number;
  /**
   * A command that runs redis-server (it is given `redis-server` and the arguments),
   * e.g. `["valgrind", "--tool=callgrind"]` for bench:redis-instructions.
   */
  launcher?: string[];
  /** how long it may take to answer PING @defaultValue 10000 */
  startTimeoutMs?: number;
}

export interface RedisServer {
  readonly port: number;
  readonly url: string;
  readonly pid: number;
  readonly dir: string;
  readonly process: ChildProcess;
  /** SIGTERM (then SIGKILL after 5 s), wait for exit, remove the temp dir if we made it. */
  stop(): Promise<void>;
  /** SIGKILL, for crash tests. Keeps the dir. */
  kill(): Promise<void>;
}

/** Thrown when no redis-server binary can be started. */
export class RedisServerMissing extends Error {
  constructor(cause: string) {
    super(
      `cannot start redis-server (${cause}). Install it (Debian/Ubuntu: apt-get install -y redis-server; macOS: brew install redis), or point rendezvous at a running Redis with --redis-url or REDIS_URL.`,
    );
    this.name = "RedisServerMissing";
  }
}

/** A TCP port that was free on 127.0.0.1 a moment ago. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.unref();
    srv.on("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const addr = srv.address();
      const port = typeof addr === "object" && addr ? addr.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

/** Whether a TCP listener could bind `host:port` now (nothing else holds it). */
export function isPortFree(port: number, host = "127.0.0.1"): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = createServer();
    srv.unref();
    srv.once("error", () => resolve(false));
    srv.listen({ port, host, exclusive: true }, () => srv.close(() => resolve(true)));
  });
}

function ping(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const sock = createConnection({ host: "127.0.0.1", port });
    let buf = "";
    sock.setTimeout(500);
    sock.on("connect", () => sock.write("PING\r\n"));
    sock.on("data", (d) => {
      buf += d.toString();
      if (buf.includes("\r\n")) {
        sock.destroy();
        resolve(buf.startsWith("+PONG"));
      }
    });
    sock.on("error", () => resolve(false));
    sock.on("timeout", () => {
      sock.destroy();
      resolve(false);
    });
  });
}

function exited(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => child.once("exit", () => resolve()));
}

/** Starts a redis-server and resolves once it answers PING. */
export async function startRedisServer(opts: RedisServerOptions = {}): Promise<RedisServer> {
  const ownDir = opts.dir === undefined;
  const dir = opts.dir ?? mkdtempSync(join(tmpdir(), "rdv-redis-"));
  mkdirSync(dir, { recursive: true });
  for (let attempt = 0; ; attempt++) {
    const port = opts.port ?? (await freePort());
    const args = [
      "--port",
      String(port),
      "--bind",
      "127.0.0.1",
      "--dir",
      dir,
      "--save",
      "",
      "--appendonly",
      opts.aof ? "yes" : "no",
      "--appendfsync",
      opts.fsync ?? "everysec",
      "--maxmemory-policy",
      "noeviction",
      "--daemonize",
      "no",
      ...(opts.args ?? []),
    ];
    const [file, ...prefix] = [...(opts.launcher ?? []), "redis-server"];
    const child = spawn(file as string, [...prefix, ...args], { stdio: ["ignore", "pipe", "pipe"] });
    let output = "";
    child.stdout?.on("data", (d) => {
      output = (output + d.toString()).slice(-4000);
    });
    child.stderr?.on("data", (d) => {
      output = (output + d.toString()).slice(-4000);
    });
    const spawnError = new Promise<Error>((resolve) => child.once("error", resolve));
    const deadline = Date.now() + (opts.startTimeoutMs ?? 10_000);
    let ready = false;
    while (Date.now() < deadline && child.exitCode === null) {
      const raced = await Promise.race([ping(port), spawnError.then((e) => e)]);
      if (raced instanceof Error) {
        throw new RedisServerMissing(raced.message);
      }
      if (raced) {
        ready = true;
        break;
      }
      await new Promise((r) => setTimeout(r, 50));
    }
    if (!ready) {
      child.kill("SIGKILL");
      await exited(child);
      if (attempt < 3 && opts.port === undefined && /Address already in use/.test(output)) continue;
      throw new Error(`redis-server did not start on port ${port}:\n${output}`);
    }
    const pid = child.pid as number;
    return {
      port,
      url: `redis://127.0.0.1:${port}`,
      pid,
      dir,
      process: child,
      async stop() {
        if (child.exitCode === null && child.signalCode === null) {
          process.kill(pid, "SIGTERM");
          const timer = setTimeout(() => child.kill("SIGKILL"), 5000);
          await exited(child);
          clearTimeout(timer);
        }
        if (ownDir) rmSync(dir, { recursive: true, force: true });
      },
      async kill() {
        if (child.exitCode === null && child.signalCode === null) {
          process.kill(pid, "SIGKILL");
          await exited(child);
        }
      },
    };
  }
}
