/**
 * Runs a rendezvous process: `start` (every role, embedded Redis by default),
 * `api`, or one worker role, with the HTTP app on its port, until SIGTERM/SIGINT,
 * which drains: stop taking HTTP requests and stream entries, finish in-flight
 * work, exit 0.
 */
import { join, resolve } from "node:path";
import {
  type Config,
  type ConfigInput,
  createLogger,
  createResources,
  ensurePartitionCount,
  type Logger,
  loadConfigFile,
  openRegistry,
  parseConfig,
  RegistryAdmin,
  RegistryStore,
  type RegistryWatch,
  resolveSecretKey,
  startTracing,
} from "@rendezvous/engine";
import { buildApp, defaultPerAddress, defaultPerClient } from "@rendezvous/http";
import { continuationQueues } from "@rendezvous/protocol";
import { TIMEOUT_QUEUE, TimeoutPlanner, WEBHOOK_QUEUE } from "@rendezvous/workers";
import { type DataDirLock, lockDataDir } from "./data-dir-lock.js";
import { describeDevConfig, ensureDevConfig } from "./dev-config.js";
import { type EmbeddedRedis, startEmbeddedRedis } from "./embedded-redis.js";
import { parseEnv } from "./env.js";
import { ensurePortFree, listenRefusal } from "./http-port.js";
import { type RunningRoles, startRoles, WORKER_ROLES, type WorkerRole } from "./roles.js";

export type ProcessKind = "start" | "api" | WorkerRole;

export interface ServeFlags {
  config?: string;
  port?: string;
  host?: string;
  redisUrl?: string;
  /** data dir of `start` (embedded Redis, dev config) @defaultValue ./.rendezvous */
  dataDir?: string;
}

export interface Served {
  url: string;
  stop(signal: string): Promise<void>;
}

/** Default HTTP port of `start` and `api`; worker roles pick a free one unless told. */
export const DEFAULT_API_PORT = 8080;

function loadConfig(path: string | undefined): Config {
  return path ? loadConfigFile(path) : parseConfig({});
}

export async function serve(kind: ProcessKind, flags: ServeFlags, logger?: Logger): Promise<Served> {
  const env = parseEnv();
  const log = logger ?? createLogger({ level: env.LOG_LEVEL });
  const dataDir = resolve(flags.dataDir ?? ".rendezvous");
  let redisUrl = flags.redisUrl ?? env.REDIS_URL;
  if (!redisUrl && kind !== "start")
    throw new Error("no Redis: pass --redis-url or set REDIS_URL (only `start` embeds one)");
  const serveApi = kind === "start" || kind === "api";
  const port = Number(flags.port ?? env.RENDEZVOUS_PORT ?? env.PORT ?? (serveApi ? DEFAULT_API_PORT : 0));
  const host = flags.host ?? env.HOST ?? "127.0.0.1";
  // Refused before anything starts: an embedded Redis's data dir is one start's at a time,
  // and a taken HTTP port is said now, not after Redis and the roles came up.
  const lock: DataDirLock | undefined = redisUrl ? undefined : lockDataDir(dataDir);
  let embedded: EmbeddedRedis | undefined;
  const cleanUp = async () => {
    await embedded?.stop();
    lock?.release();
  };
  try {
    await ensurePortFree(host, port);
  } catch (err) {
    await cleanUp();
    throw err;
  }
  let configPath = flags.config ?? env.RENDEZVOUS_CONFIG;
  let created: { path: string } | undefined;
  if (!configPath && kind === "start") {
    configPath = resolve(dataDir, "config.json");
    if (ensureDevConfig(configPath).created) created = { path: configPath };
  }
  let config: Config;
  try {
    config = loadConfig(configPath);
    if (!redisUrl) {
      embedded = await startEmbeddedRedis(dataDir, log);
      redisUrl = embedded.url;
      log.info(
        { redis: redisUrl, dir: embedded.dir, pid: embedded.pid, urlFile: embedded.urlFile },
        `embedded redis-server started at ${redisUrl} (AOF on; address in ${embedded.urlFile})`,
      );
    }
  } catch (err) {
    await cleanUp();
    throw err;
  }

  // what the dev config's description prints: the file as read (the registry replaces config.tenants)
  const asRead: unknown = created ? JSON.parse(JSON.stringify(config)) : undefined;
  // tracing (docs/api.md, Tracing): loaded only when the OTEL_* variables ask for it
  let tracing: Awaited<ReturnType<typeof startTracing>>;
  try {
    tracing = await startTracing(kind, log);
  } catch (err) {
    await cleanUp();
    throw err;
  }
  const res = createResources({
    redisUrl,
    config,
    prefix: env.RENDEZVOUS_PREFIX,
    logger: log,
    tracing,
    commandTimeoutMs: env.RENDEZVOUS_REDIS_COMMAND_TIMEOUT_MS,
  });
  let started: RunningRoles | undefined;
  let watch: RegistryWatch | undefined;
  try {
    await ensurePartitionCount(res.store);
    // the registry: seeded from the file on first start, then followed (docs/api.md, Admin)
    const { key, source } = await resolveSecretKey(
      new RegistryStore(res.redis, res.prefix),
      env.RENDEZVOUS_SECRET_KEY,
      join(dataDir, "secret.key"),
      { createFile: kind === "start" },
    );
    if (source === "registry") {
      log.warn(
        { source },
        "RENDEZVOUS_SECRET_KEY is not set: the registry's development key is used (kept in Redis beside it); secrets at rest are protected only once RENDEZVOUS_SECRET_KEY is set",
      );
    } else if (source === "file") {
      log.warn({ source }, "RENDEZVOUS_SECRET_KEY is not set: the development key of the data directory is used");
    }
    const registry = await openRegistry({
      redis: res.redis,
      subscriber: res.subscriber("registry-subscriber"),
      prefix: res.prefix,
      config,
      directory: res.directory,
      key,
      logger: log,
      metrics: res.metrics,
      pollMs: env.RENDEZVOUS_REGISTRY_POLL_MS,
    });
    watch = registry.watch;
    const workerRoles: WorkerRole[] = kind === "start" ? [...WORKER_ROLES] : kind === "api" ? [] : [kind];
    const roles = await startRoles(res, workerRoles);
    started = roles;
    // the API plans the timeout bucket jobs of new waits: with the local scheduler's planner, or one of its own
    const planner = roles.scheduler?.planner ?? (serveApi ? new TimeoutPlanner(res) : undefined);
    const names = serveApi ? ["api", ...workerRoles] : [...workerRoles];
    // the queues shown (Bull Board, gauges, console): the registry replaces config.tenants on a
    // change, so they are worked out again when that object is another
    let namedFor: unknown;
    let shownQueues: readonly string[] = [];
    const queueNames = (): readonly string[] => {
      if (res.config.tenants !== namedFor) {
        namedFor = res.config.tenants;
        try {
          shownQueues = [TIMEOUT_QUEUE, WEBHOOK_QUEUE, ...continuationQueues(res.config.tenants)];
        } catch (err) {
          // two queue names alike (the registry refuses them): the last good list stays
          log.warn({ err: (err as Error).message }, "continuation queues of the registry's tenants");
        }
      }
      return shownQueues;
    };
    const app = await buildApp({
      res,
      roles: names,
      running: () => roles.running(),
      api: serveApi,
      scheduleTimeout: planner ? (deadline) => planner.plan([{ deadline }]) : undefined,
      queueNames,
      accessLog: env.RENDEZVOUS_ACCESS_LOG,
      processMetrics: true,
      registry: serveApi ? new RegistryAdmin(registry.store, key) : undefined,
      limits: {
        maxConnections: env.RENDEZVOUS_MAX_CONNECTIONS,
        maxConnectionsPerAddress:
          env.RENDEZVOUS_MAX_CONNECTIONS_PER_ADDRESS ?? defaultPerAddress(env.RENDEZVOUS_MAX_CONNECTIONS),
        keepAliveTimeoutMs: env.RENDEZVOUS_KEEP_ALIVE_TIMEOUT_MS,
        headersTimeoutMs: env.RENDEZVOUS_HEADERS_TIMEOUT_MS,
        requestTimeoutMs: env.RENDEZVOUS_REQUEST_TIMEOUT_MS,
        maxHeaderBytes: env.RENDEZVOUS_MAX_HEADER_BYTES,
      },
      bodyBudget: {
        totalBytes: env.RENDEZVOUS_BODY_BUDGET_BYTES,
        perClientBytes:
          env.RENDEZVOUS_BODY_BUDGET_PER_CLIENT_BYTES ?? defaultPerClient(env.RENDEZVOUS_BODY_BUDGET_BYTES),
      },
    });
    const url = await app.listen({ host, port, backlog: env.RENDEZVOUS_LISTEN_BACKLOG });
    log.info(
      { roles: names, url, prefix: env.RENDEZVOUS_PREFIX, queuePrefix: res.queuePrefix, cluster: res.cluster },
      `rendezvous ${names.join("+")} listening on ${url}`,
    );
    if (created) {
      const redis = embedded && { url: embedded.url, file: embedded.urlFile };
      process.stdout.write(describeDevConfig(created.path, asRead as ConfigInput, url, redis));
    }

    let stopping: Promise<void> | undefined;
    return {
      url,
      stop(signal: string) {
        stopping ??= (async () => {
          log.info({ signal }, "draining");
          await app.close(); // no new requests; in-flight ones finish
          await roles.stop();
          await watch?.stop();
          if (planner && planner !== roles.scheduler?.planner) await planner.close();
          await res.close();
          await cleanUp();
          // the spans still buffered go out before exit
          await tracing.shutdown().catch((err: unknown) => log.warn({ err }, "tracing: flush on stop failed"));
          log.info("stopped");
        })();
        return stopping;
      },
    };
  } catch (err) {
    await started?.stop();
    await watch?.stop();
    await res.close();
    await cleanUp();
    await tracing.shutdown().catch(() => undefined);
    throw listenRefusal(err, host, port);
  }
}
