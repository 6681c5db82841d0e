/** The deployment-wide metadata key: the stored partition count, and the write probe of /readyz. */
import { RendezvousError } from "@rendezvous/protocol";
import type { ReaderSource } from "./source.js";

/** The meta field naming the wait-index layout the deployment was created with ("2": no legacy members). */
const INDEX_LAYOUT = "indexLayout";

/**
 * Stores the partition count on first start; refuses a process configured with
 * another one (a silent change would re-route every match key). A deployment created
 * now records that its wait indexes hold no legacy member (`indexLayout` 2), and a
 * process that reads so sets `keys.legacyIndex` false (docs/architecture.md, Upgrading
 * the wait indexes). A deployment created before keeps reading both layouts.
 * @throws RendezvousError invalid_config
 */
export async function ensurePartitionCount(src: ReaderSource): Promise<void> {
  const key = src.keys.metaKey;
  if ((await src.redis.hsetnx(key, "partitions", String(src.keys.partitions))) === 1) {
    await src.redis.hset(key, INDEX_LAYOUT, "2");
  }
  src.keys.legacyIndex = (await src.redis.hget(key, INDEX_LAYOUT)) !== "2";
  const stored = Number(await src.redis.hget(key, "partitions"));
  if (stored !== src.keys.partitions) {
    throw new RendezvousError(
      "invalid_config",
      `partitions: this deployment (prefix ${src.keys.prefix}) was created with ${stored} partitions; the config says ${src.keys.partitions}. Keep ${stored}: changing it re-routes every match key.`,
      { stored, configured: src.keys.partitions },
    );
  }
}

/** The stored partition count, or null before the first start. */
export async function storedPartitionCount(src: ReaderSource): Promise<number | null> {
  const raw = await src.redis.hget(src.keys.metaKey, "partitions");
  return raw === null ? null : Number(raw);
}

/** One write of the readiness probe key (in the meta key's slot), expiring after `ttlMs`. */
export function writeReadyProbe(src: ReaderSource, value: string, ttlMs: number): Promise<unknown> {
  return src.redis.set(src.keys.readyProbeKey, value, "PX", ttlMs);
}
