/**
 * The `rendezvous` command line (API.md, Starting it).
 */
import {
  type Config,
  createLogger,
  createResources,
  isRendezvousError,
  type Logger,
  loadConfigFile,
  parseConfig,
} from "@rendezvous/core";
import { Command, Option } from "commander";
import Fastify from "fastify";
import { parseEnv } from "./env.js";
import { opsRoutes } from "./ops.js";
import { startRoles, type WorkerRole } from "./roles.js";

interface CommonFlags {
  config?: string;
  port?: string;
  redisUrl?: string;
}

function fail(logger: Logger | undefined, err: unknown): never {
  const message = isRendezvousError(err) ? err.message : err instanceof Error ? err.message : String(err);
  if (logger) logger.fatal({ err }, message);
  process.stderr.write(`rendezvous: ${message}\n`);
  process.exit(1);
}

function loadConfig(path: string | undefined): Config {
  return path ? loadConfigFile(path) : parseConfig({});
}

/** Runs worker roles with their operations server until SIGTERM/SIGINT. */
async function runWorkerRoles(names: WorkerRole[], flags: CommonFlags): Promise<void> {
  let logger: Logger | undefined;
  try {
    const env = parseEnv();
    logger = createLogger({ level: env.LOG_LEVEL });
    const config = loadConfig(flags.config ?? env.RENDEZVOUS_CONFIG);
    const redisUrl = flags.redisUrl ?? env.REDIS_URL;
    if (!redisUrl) throw new Error("no Redis: pass --redis-url or set REDIS_URL (only `start` embeds a redis-server)");
    const res = createResources({ redisUrl, config, prefix: env.RENDEZVOUS_PREFIX, logger });
    const roles = await startRoles(res, names);
    const app = Fastify({ logger: false });
    await app.register(opsRoutes, { res, running: () => roles.running(), roles: names });
    const port = Number(flags.port ?? env.RENDEZVOUS_PORT ?? env.PORT ?? 0);
    const url = await app.listen({ host: "127.0.0.1", port });
    logger.info(
      { roles: names, url, prefix: env.RENDEZVOUS_PREFIX },
      `rendezvous ${names.join("+")} listening on ${url}`,
    );
    let stopping = false;
    const shutdown = async (signal: string) => {
      if (stopping) return;
      stopping = true;
      logger?.info({ signal }, "draining");
      await roles.stop();
      await app.close();
      await res.close();
      logger?.info("stopped");
      process.exit(0);
    };
    onSignals(shutdown);
  } catch (err) {
    fail(logger, err);
  }
}

/** Installs the drain handler; a signal that came while loading is honoured now. */
function onSignals(shutdown: (signal: string) => Promise<void>): void {
  process.on("SIGTERM", () => void shutdown("SIGTERM"));
  process.on("SIGINT", () => void shutdown("SIGINT"));
  const early = (globalThis as { __rendezvousEarlySignals?: { signals: string[]; release: () => void } })
    .__rendezvousEarlySignals;
  early?.release();
  const first = early?.signals[0];
  if (first) void shutdown(first);
}

function common(cmd: Command): Command {
  return cmd
    .addOption(new Option("--config <file>", "config file (JSON); env RENDEZVOUS_CONFIG"))
    .addOption(new Option("--port <n>", "HTTP port for /healthz, /readyz, /metrics; env RENDEZVOUS_PORT or PORT"))
    .addOption(new Option("--redis-url <url>", "Redis URL; env REDIS_URL"));
}

export function buildProgram(): Command {
  const program = new Command("rendezvous")
    .description("Durable waits for external events")
    .showHelpAfterError()
    .version("0.1.0");
  for (const role of ["matcher", "scheduler", "dispatcher"] as const) {
    common(program.command(role).description(`run the ${role} role alone`)).action((flags: CommonFlags) =>
      runWorkerRoles([role], flags),
    );
  }
  common(program.command("workers").description("run matcher, scheduler and dispatcher in one process")).action(
    (flags: CommonFlags) => runWorkerRoles(["matcher", "scheduler", "dispatcher"], flags),
  );
  return program;
}

await buildProgram().parseAsync(process.argv);
