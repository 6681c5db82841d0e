/**
 * The embedded redis-server of `rendezvous start`: AOF under `<data-dir>/redis`, on the
 * port of the last start when it is free, else a free one. Its address is written to
 * `<data-dir>/redis.url` once it answers (hosts and `rendezvous doctor` read it there)
 * and removed on a clean stop. A redis-server of this directory left running by a start
 * that was SIGKILLed (the caller holds the data-dir lock, so nothing else owns it) is shut
 * down first (SHUTDOWN: it flushes its AOF), so two never share the directory.
 */
import { mkdirSync, readFileSync, realpathSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { freePort, isPortFree, type Logger, type RedisServer, startRedisServer } from "@rendezvous/engine";
import { Redis } from "ioredis";
import { StartRefused } from "./refusal.js";

/** The address file in the data dir: one line, `redis://127.0.0.1:<port>`. */
export const REDIS_URL_FILE = "redis.url";
/** The port of the last embedded start, inside the Redis dir (kept across stops). */
const PORT_FILE = "port";

export interface EmbeddedRedis {
  readonly url: string;
  readonly pid: number;
  readonly dir: string;
  /** the address file */
  readonly urlFile: string;
  /** stops redis-server (its AOF flushed) and removes the address file */
  stop(): Promise<void>;
}

function readText(path: string): string | undefined {
  try {
    return readFileSync(path, "utf8").trim();
  } catch {
    return undefined;
  }
}

/** The URL in `<dataDir>/redis.url`, when there is one. */
export function readEmbeddedRedisUrl(dataDir: string): string | undefined {
  const text = readText(join(resolve(dataDir), REDIS_URL_FILE));
  return text ? text.split("\n")[0] : undefined;
}

function validPort(value: string | undefined): number | undefined {
  const n = Number(value);
  return Number.isInteger(n) && n > 0 && n < 65536 ? n : undefined;
}

function portOf(url: string | undefined): number | undefined {
  try {
    return url ? validPort(new URL(url).port) : undefined;
  } catch {
    return undefined;
  }
}

/** Writes `path` whole or not at all (a reader never sees half a line). */
function writeAtomically(path: string, text: string): void {
  const tmp = `${path}.${process.pid}.tmp`;
  writeFileSync(tmp, text);
  renameSync(tmp, path);
}

/**
 * If a redis-server of `dir` answers on 127.0.0.1:port, shuts it down and waits until the
 * port is free; a Redis of another directory on that port is left alone.
 */
async function stopOrphan(port: number, dir: string, log: Logger): Promise<void> {
  const redis = new Redis({
    host: "127.0.0.1",
    port,
    lazyConnect: true,
    // something else may hold the port and never answer: give up quickly, it is no orphan
    connectTimeout: 1000,
    commandTimeout: 1000,
    enableReadyCheck: false,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
  });
  redis.on("error", () => undefined);
  try {
    await redis.connect();
    const [, orphanDir] = (await redis.config("GET", "dir")) as [string, string];
    if (orphanDir !== realpathSync(dir)) return;
    const pid = /process_id:(\d+)/.exec(await redis.info("server"))?.[1];
    log.warn(
      { port, pid: pid && Number(pid), dir },
      "a redis-server of this data dir outlived its start: shutting it down",
    );
    await redis.call("SHUTDOWN").catch(() => undefined); // it closes the connection as it exits
  } catch {
    return; // nothing answers there: no orphan
  } finally {
    redis.disconnect();
  }
  const deadline = Date.now() + 15_000;
  while (!(await isPortFree(port))) {
    if (Date.now() > deadline) {
      throw new StartRefused(`a redis-server of ${dir} still runs on port ${port} after SHUTDOWN: stop it first`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}

export async function startEmbeddedRedis(dataDir: string, log: Logger): Promise<EmbeddedRedis> {
  const dir = resolve(dataDir, "redis");
  const urlFile = resolve(dataDir, REDIS_URL_FILE);
  const portFile = join(dir, PORT_FILE);
  mkdirSync(dir, { recursive: true });
  const recorded = portOf(readText(urlFile)); // left by a start that did not stop cleanly
  const last = validPort(readText(portFile)) ?? recorded;
  for (const port of new Set([recorded, last])) if (port !== undefined) await stopOrphan(port, dir, log);

  const start = async (port: number | undefined): Promise<RedisServer> => {
    const chosen = port ?? (await freePort());
    writeFileSync(portFile, `${chosen}\n`); // before it runs: a crash now still tells the next start
    return startRedisServer({ dir, port: chosen, aof: true, fsync: "everysec" });
  };
  let server: RedisServer;
  if (last !== undefined && (await isPortFree(last))) {
    try {
      server = await start(last);
    } catch (err) {
      // taken between the check and redis-server's bind: any free port will do
      if (!/Address already in use/.test(String(err))) throw err;
      server = await start(undefined);
    }
  } else {
    server = await start(undefined);
  }
  writeAtomically(urlFile, `${server.url}\n`);
  return {
    url: server.url,
    pid: server.pid,
    dir,
    urlFile,
    async stop() {
      await server.stop();
      if (readText(urlFile) === server.url) rmSync(urlFile, { force: true });
    },
  };
}
