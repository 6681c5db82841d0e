/**
 * The `rendezvous` command line (docs/api.md, Starting it).
 */

import { createLogger, type Logger, loadConfigFile, parseConfig, RedisServerMissing } from "@rendezvous/engine";
import { isRendezvousError } from "@rendezvous/protocol";
import { Command, Option } from "commander";
import { addAdminCommands } from "./admin-cli.js";
import { doctorTarget, runDoctor } from "./doctor.js";
import { parseEnv } from "./env.js";
import { addOperatorCommands } from "./operator.js";
import { isStartRefused } from "./refusal.js";
import { type ProcessKind, type ServeFlags, serve } from "./serve.js";

function fail(logger: Logger | undefined, err: unknown): never {
  const message = isRendezvousError(err) ? err.message : err instanceof Error ? err.message : String(err);
  // a refusal (data dir in use, port taken, no redis-server) is the one line below, no stack
  if (!isStartRefused(err) && !(err instanceof RedisServerMissing)) logger?.fatal({ err }, message);
  process.stderr.write(`rendezvous: ${message}\n`);
  process.exit(1);
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

async function run(kind: ProcessKind, flags: ServeFlags): Promise<void> {
  let logger: Logger | undefined;
  try {
    logger = createLogger({ level: parseEnv().LOG_LEVEL });
    const served = await serve(kind, flags, logger);
    onSignals(async (signal) => {
      try {
        await served.stop(signal);
        process.exit(0);
      } catch (err) {
        fail(logger, err);
      }
    });
  } catch (err) {
    fail(logger, err);
  }
}

function serverOptions(cmd: Command): Command {
  return cmd
    .addOption(new Option("--config <file>", "config file (JSON); env RENDEZVOUS_CONFIG"))
    .addOption(new Option("--port <n>", "HTTP port; env RENDEZVOUS_PORT or PORT"))
    .addOption(new Option("--host <addr>", "HTTP bind address; env HOST (default 127.0.0.1)"))
    .addOption(new Option("--redis-url <url>", "Redis URL; env REDIS_URL"));
}

/** The data dir of a role: an earlier version's `DIR/secret.key` is read there (never created). */
function dataDirOption(): Option {
  return new Option(
    "--data-dir <dir>",
    "data dir (`start`: embedded Redis, dev config; any role: an earlier version's secret.key, read only)",
  ).default(".rendezvous");
}

export function buildProgram(): Command {
  const program = new Command("rendezvous")
    .description("Durable waits for external events")
    .showHelpAfterError()
    .version("0.1.0");
  serverOptions(
    program
      .command("start")
      .description("every role in one process; without a Redis URL an embedded redis-server (AOF) under ./.rendezvous"),
  )
    .addOption(
      new Option("--data-dir <dir>", "where the embedded Redis and the dev config live").default(".rendezvous"),
    )
    .action((flags: ServeFlags) => run("start", flags));
  serverOptions(program.command("api").description("the HTTP API alone (producer and host routes)"))
    .addOption(dataDirOption())
    .action((flags: ServeFlags) => run("api", flags));
  for (const role of ["matcher", "scheduler", "dispatcher"] as const) {
    serverOptions(program.command(role).description(`the ${role} role alone`))
      .addOption(dataDirOption())
      .action((flags: ServeFlags) => run(role, flags));
  }
  serverOptions(
    program
      .command("doctor")
      .description(
        "check Redis: version, AOF, noeviction, partition count; without a Redis URL, the embedded Redis of `start`",
      ),
  )
    .addOption(
      new Option("--data-dir <dir>", "data dir of the `start` whose embedded Redis to check").default(".rendezvous"),
    )
    .option("--json", "machine-readable output")
    .action(async (flags: ServeFlags & { json?: boolean }) => {
      try {
        const env = parseEnv();
        const target = doctorTarget(flags, env);
        const configPath = flags.config ?? env.RENDEZVOUS_CONFIG ?? target.config;
        const config = configPath ? loadConfigFile(configPath) : parseConfig({});
        const redisUrl = target.url;
        const checks = await runDoctor(redisUrl, config, env.RENDEZVOUS_PREFIX).catch((err: unknown) => {
          throw target.unreachable?.() ?? err;
        });
        const ok = checks.every((c) => c.ok);
        if (flags.json) process.stdout.write(`${JSON.stringify({ ok, redis: redisUrl, checks }, null, 2)}\n`);
        else {
          process.stdout.write(`${target.describe}\n`);
          for (const c of checks) {
            process.stdout.write(
              `${c.ok ? "ok  " : "FAIL"}  ${c.name.padEnd(17)} ${c.value}${c.ok ? "" : `  — ${c.advice}`}\n`,
            );
          }
        }
        process.exit(ok ? 0 : 1);
      } catch (err) {
        fail(undefined, err);
      }
    });
  addOperatorCommands(program);
  addAdminCommands(program);
  return program;
}

await buildProgram().parseAsync(process.argv);
