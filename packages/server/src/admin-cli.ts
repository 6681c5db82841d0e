/**
 * `rendezvous admin …` (docs/api.md, Admin): `apply FILE [--dry-run]` reconciles the
 * registry with a config file straight in Redis; the other subcommands call the admin
 * routes of a running API with the admin token.
 */
import { existsSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import {
  checkSecretKey,
  createRedis,
  describeChange,
  loadConfigFile,
  planSeed,
  RegistryStore,
  resolveSecretKey,
} from "@rendezvous/engine";
import { EventValidator } from "@rendezvous/http";
import { type Command, Option } from "commander";
import { parseEnv } from "./env.js";

interface ApplyFlags {
  dryRun?: boolean;
  redisUrl?: string;
  dataDir: string;
}

/** The lines of an apply (dry or not): one per change, then the count or what was written. */
export async function applyConfig(file: string, flags: ApplyFlags): Promise<string[]> {
  const env = parseEnv();
  const config = loadConfigFile(file);
  // its payload schemas must compile, as at startup (names the type that does not)
  new EventValidator(config);
  const dir = resolve(flags.dataDir);
  const urlFile = join(dir, "redis.url");
  const url =
    flags.redisUrl ?? env.REDIS_URL ?? (existsSync(urlFile) ? readFileSync(urlFile, "utf8").trim() : undefined);
  if (!url) throw new Error("no Redis: pass --redis-url or set REDIS_URL (or run it beside a `start` of --data-dir)");
  const redis = createRedis(url, { name: "rendezvous:admin-apply" });
  try {
    const store = new RegistryStore(redis, env.RENDEZVOUS_PREFIX);
    // the key every process of this Redis uses: no key of this machine's data dir is made
    const { key } = await resolveSecretKey(store, env.RENDEZVOUS_SECRET_KEY, join(dir, "secret.key"));
    await checkSecretKey(store, key);
    for (let attempt = 0; attempt < 5; attempt++) {
      const snap = await store.load();
      const plan = planSeed("apply", config, snap, key, Date.now());
      const lines = plan.changes.map((c) => describeChange(c, snap));
      const n = plan.changes.length;
      if (flags.dryRun) return [...lines, n === 0 ? "no changes" : `${n} changes`];
      if (plan.ops.length === 0) return [...lines, "no changes"];
      const done = await store.commit(snap.version, plan.ops, [{ actor: "apply", action: "apply", target: "config" }]);
      if (done.ok) return [...lines, `${n} changes`, `applied ${n} changes (registry version ${done.version})`];
    }
    throw new Error("the registry kept changing while applying; run it again");
  } finally {
    redis.disconnect();
  }
}

interface HttpFlags {
  url: string;
  token?: string;
}

async function call(flags: HttpFlags, method: string, path: string, body?: unknown): Promise<void> {
  if (!flags.token) throw new Error("the admin token is needed: --token or RENDEZVOUS_TOKEN");
  const res = await fetch(new URL(path, flags.url), {
    method,
    headers: {
      authorization: `Bearer ${flags.token}`,
      ...(body === undefined ? {} : { "content-type": "application/json" }),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  process.stdout.write(`${text}\n`);
  if (!res.ok) {
    let code = String(res.status);
    try {
      code = (JSON.parse(text) as { error?: { code?: string } }).error?.code ?? code;
    } catch {
      // not JSON
    }
    throw new Error(`the API answered ${res.status} ${code}`);
  }
}

function http(cmd: Command): Command {
  return cmd
    .addOption(new Option("--url <url>", "API base URL").env("RENDEZVOUS_URL").default("http://127.0.0.1:8080"))
    .addOption(new Option("--token <token>", "the admin token").env("RENDEZVOUS_TOKEN"));
}

const seg = encodeURIComponent;

/** Runs an action; a failure is one stderr line and exit 1. */
function guarded<A extends unknown[]>(fn: (...args: A) => Promise<void>): (...args: A) => Promise<void> {
  return async (...args: A) => {
    try {
      await fn(...args);
    } catch (err) {
      process.stderr.write(`rendezvous: ${err instanceof Error ? err.message : String(err)}\n`);
      process.exit(1);
    }
  };
}

export function addAdminCommands(program: Command): void {
  const admin = program.command("admin").description("tenants, producers, credentials and event types at run time");
  admin
    .command("apply <file>")
    .description("make the registry equal to a config file's tenants and event types (prints the diff)")
    .option("--dry-run", "print the diff, change nothing")
    .addOption(new Option("--redis-url <url>", "Redis URL; env REDIS_URL"))
    .addOption(
      new Option("--data-dir <dir>", "data dir of the secret key and of an embedded Redis").default(".rendezvous"),
    )
    .action(
      guarded(async (file: string, flags: ApplyFlags) => {
        for (const line of await applyConfig(file, flags)) process.stdout.write(`${line}\n`);
      }),
    );

  const tenant = admin.command("tenant").description("tenants");
  http(tenant.command("list")).action(guarded((f: HttpFlags) => call(f, "GET", "/v1/admin/tenants")));
  http(tenant.command("create <name>"))
    .option("--webhook-url <url>")
    .option("--webhook-secret <secret>")
    .action(
      guarded((name: string, f: HttpFlags & { webhookUrl?: string; webhookSecret?: string }) =>
        call(f, "POST", "/v1/admin/tenants", {
          name,
          ...(f.webhookUrl ? { webhook: { url: f.webhookUrl, secret: f.webhookSecret ?? "" } } : {}),
        }),
      ),
    );
  for (const [verb, disabled] of [
    ["disable", true],
    ["enable", false],
  ] as const) {
    http(tenant.command(`${verb} <name>`)).action(
      guarded((name: string, f: HttpFlags) => call(f, "PATCH", `/v1/admin/tenants/${seg(name)}`, { disabled })),
    );
  }
  http(tenant.command("delete <name>"))
    .option("--force", "even while it has waiting waits")
    .action(
      guarded((name: string, f: HttpFlags & { force?: boolean }) =>
        call(f, "DELETE", `/v1/admin/tenants/${seg(name)}${f.force ? "?force=true" : ""}`),
      ),
    );

  const hostKey = admin.command("host-key").description("host keys");
  http(hostKey.command("create <tenant>")).action(
    guarded((t: string, f: HttpFlags) => call(f, "POST", `/v1/admin/tenants/${seg(t)}/host-keys`, {})),
  );
  http(hostKey.command("rotate <tenant> <id>"))
    .option("--overlap-seconds <n>", "how long the old key keeps working", "3600")
    .action(
      guarded((t: string, id: string, f: HttpFlags & { overlapSeconds: string }) =>
        call(f, "POST", `/v1/admin/tenants/${seg(t)}/host-keys/${seg(id)}/rotate`, {
          overlapSeconds: Number(f.overlapSeconds),
        }),
      ),
    );
  http(hostKey.command("revoke <tenant> <id>")).action(
    guarded((t: string, id: string, f: HttpFlags) =>
      call(f, "DELETE", `/v1/admin/tenants/${seg(t)}/host-keys/${seg(id)}`),
    ),
  );

  const producer = admin.command("producer").description("producers");
  http(producer.command("create <tenant> <id>"))
    .requiredOption("--event-types <types>", "comma-separated event types (a trailing * is a prefix)")
    .option("--secret", "an HMAC secret as well as a bearer key")
    .option("--rate-limit <n>", "events per second")
    .action(
      guarded((t: string, id: string, f: HttpFlags & { eventTypes: string; secret?: boolean; rateLimit?: string }) =>
        call(f, "POST", `/v1/admin/tenants/${seg(t)}/producers`, {
          id,
          eventTypes: f.eventTypes.split(",").map((s) => s.trim()),
          credentials: f.secret ? ["key", "secret"] : ["key"],
          ...(f.rateLimit ? { rateLimitPerSec: Number(f.rateLimit) } : {}),
        }),
      ),
    );

  http(admin.command("audit"))
    .option("--limit <n>", "entries", "100")
    .action(guarded((f: HttpFlags & { limit: string }) => call(f, "GET", `/v1/admin/audit?limit=${seg(f.limit)}`)));
}
