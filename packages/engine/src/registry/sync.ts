/**
 * Opening the registry in a process: check the secret key against the registry's, seed
 * it from the config file (docs/api.md, Admin), load it into the Directory and follow it.
 */
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname } from "node:path";
import { RendezvousError } from "@rendezvous/protocol";
import type { Config } from "../config.js";
import type { Logger } from "../logger.js";
import type { Metrics } from "../metrics.js";
import type { RedisLike } from "../redis.js";
import type { Subscriber } from "../subscriber.js";
import type { Directory } from "./directory.js";
import { RegistryWatch } from "./directory.js";
import { RegistryStore } from "./registry-store.js";
import { SecretKey } from "./secret-key.js";
import { describeChange, planSeed } from "./seed.js";

export interface OpenRegistryOptions {
  redis: RedisLike;
  /** a connection of its own for SUBSCRIBE */
  subscriber: Subscriber;
  prefix: string;
  config: Config;
  directory: Directory;
  key: SecretKey;
  logger: Logger;
  metrics?: Metrics;
  /** @defaultValue 500 */
  pollMs?: number;
}

/** Where a process's secret key came from. */
export type SecretKeySource = "env" | "registry" | "file";

/** The key a key file holds, or undefined (absent, unreadable, not a key). */
function fileKey(file: string | undefined): SecretKey | undefined {
  if (file === undefined) return undefined;
  try {
    return SecretKey.parse(readFileSync(file, "utf8"));
  } catch {
    return undefined;
  }
}

/**
 * The secret key of a process (docs/api.md, Admin, "Secrets at rest"): the one of
 * `RENDEZVOUS_SECRET_KEY`; else the key of `keyFile` when the registry was written with it
 * (or is new and the file exists); else, with `createFile` (`rendezvous start`: one process
 * that owns its data directory) on a new registry, a key made in `keyFile` (mode 0600) and
 * never written to Redis; else the development key kept beside the registry, made by the
 * first process that needs it (HSETNX: every split role reads the same one). A registry
 * whose key check names none of them gets a random key here, which the key check then
 * refuses. The caller checks the key against the registry ({@link checkSecretKey}).
 */
export async function resolveSecretKey(
  store: RegistryStore,
  envValue: string | undefined,
  keyFile?: string,
  opts: { createFile?: boolean } = {},
): Promise<{ key: SecretKey; source: SecretKeySource }> {
  if (envValue !== undefined && envValue !== "") return { key: SecretKey.parse(envValue), source: "env" };
  const check = await store.readKeyCheck();
  const stored = await store.readDevKey();
  const file = fileKey(keyFile);
  if (file !== undefined && (check === null ? stored === null : file.check() === check)) {
    return { key: file, source: "file" };
  }
  if (opts.createFile === true && keyFile !== undefined && check === null && stored === null && file === undefined) {
    const made = SecretKey.generate();
    mkdirSync(dirname(keyFile), { recursive: true });
    writeFileSync(keyFile, `${made.toHex()}\n`, { mode: 0o600, flag: "wx" });
    return { key: made, source: "file" };
  }
  // a registry written under a key of its own has no development key: none is made for it
  // (the key check then refuses this process)
  const text = stored ?? (check === null ? await store.devKey(SecretKey.generate().toHex()) : undefined);
  const dev = text === undefined ? SecretKey.generate() : SecretKey.parse(text);
  return { key: dev, source: "registry" };
}

/**
 * @throws RendezvousError `invalid_config` when the key is not the registry's
 */
export async function checkSecretKey(store: RegistryStore, key: SecretKey): Promise<void> {
  const mine = key.check();
  if ((await store.keyCheck(mine)) !== mine) {
    throw new RendezvousError(
      "invalid_config",
      "the secret key does not match the registry's: set RENDEZVOUS_SECRET_KEY to the key the registry was written with",
    );
  }
}

/** Seeds (at most a few tries against concurrent starts), loads and follows the registry. */
export async function openRegistry(o: OpenRegistryOptions): Promise<{ store: RegistryStore; watch: RegistryWatch }> {
  const store = new RegistryStore(o.redis, o.prefix);
  await checkSecretKey(store, o.key);
  for (let attempt = 0; attempt < 5; attempt++) {
    const snap = await store.load();
    const plan = planSeed("seed", o.config, snap, o.key, Date.now());
    if (plan.ops.length === 0) break;
    const done = await store.commit(snap.version, plan.ops, [{ actor: "seed", action: "seed", target: "config" }]);
    if (done.ok) {
      o.logger.info(
        { version: done.version, changes: plan.changes.map((c) => describeChange(c, snap)) },
        "registry seeded from the config file",
      );
      break;
    }
  }
  const watch = new RegistryWatch({
    store,
    key: o.key,
    directory: o.directory,
    subscriber: o.subscriber,
    logger: o.logger.child({ system: "registry" }),
    metrics: o.metrics,
    pollMs: o.pollMs,
  });
  await watch.start();
  return { store, watch };
}
