/**
 * The deployment-wide metadata key: the stored partition count and placement scheme,
 * and the write probe of /readyz.
 */
import { RendezvousError } from "@rendezvous/protocol";
import type { Placement } from "../keys.js";
import type { ReaderSource } from "./source.js";

/** The meta field naming the wait-index layout the deployment was created with ("2": no legacy members). */
const INDEX_LAYOUT = "indexLayout";

/**
 * Stores the partition count, the placement scheme and the wait-index layout on first
 * start, and makes the layout use the stored ones: placement `correlation` for a
 * deployment created now, `match-key` for one created before placements were recorded
 * (its meta has `partitions` and no `placement`); a deployment created now records that
 * its wait indexes hold no legacy member (`indexLayout` 2: `keys.legacyIndex` false;
 * docs/architecture.md, Upgrading the wait indexes), one created before keeps reading
 * both layouts. Refuses a process configured with another partition count (a silent
 * change would re-route every match key).
 *
 * The placement and the index layout are written before the partition count, and only
 * when no partition count is stored: so a process that finds the count finds them too,
 * and a deployment created before keeps `match-key` and both index layouts for good.
 * (Each write is an HSETNX of one field: starting processes race to the same values.)
 * @throws RendezvousError invalid_config
 */
export async function ensurePartitionCount(src: ReaderSource): Promise<void> {
  const key = src.keys.metaKey;
  if ((await src.redis.hget(key, "partitions")) === null) {
    await src.redis.hsetnx(key, "placement", "correlation");
    await src.redis.hsetnx(key, INDEX_LAYOUT, "2");
    await src.redis.hsetnx(key, "partitions", String(src.keys.partitions));
  }
  const [rawCount, rawPlacement, layout] = await src.redis.hmget(key, "partitions", "placement", INDEX_LAYOUT);
  src.keys.usePlacement(placementOf(rawPlacement ?? null));
  src.keys.legacyIndex = layout !== "2";
  const stored = Number(rawCount);
  if (stored !== src.keys.partitions) {
    throw new RendezvousError(
      "invalid_config",
      `partitions: this deployment (prefix ${src.keys.prefix}) was created with ${stored} partitions; the config says ${src.keys.partitions}. Keep ${stored}: changing it re-routes every match key.`,
      { stored, configured: src.keys.partitions },
    );
  }
}

function placementOf(raw: string | null): Placement {
  return raw === "correlation" ? "correlation" : "match-key";
}

/** The stored placement scheme, or null before the first start. */
export async function storedPlacement(src: ReaderSource): Promise<Placement | null> {
  const [count, placement] = await src.redis.hmget(src.keys.metaKey, "partitions", "placement");
  return count === null && placement === null ? null : placementOf(placement ?? null);
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
