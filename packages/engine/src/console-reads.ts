/**
 * Read-only views the operator console needs beyond `inspect.ts`: wait counts per
 * tenant from the index sizes (ZLEXCOUNT, never loading a wait), a listing that walks
 * several tenants with one cursor, overdue waits, and the recent refusals. Nothing
 * here changes state, and nothing walks the keyspace.
 */
import type { ChainableCommander } from "ioredis";
import { type BatchCommand, execBatch } from "./batch.js";
import { decodeParts, encodeParts } from "./encoding.js";
import type { ListLease } from "./list-gate.js";
import {
  decodeCursor,
  encodeCursor,
  invalidCursor,
  type ListCursor,
  listBudget,
  scanTenant,
  type WaitFilter,
  type WaitPage,
} from "./list-waits.js";
import { iso } from "./records.js";
import type { Store } from "./store.js";

/** Waits of one tenant by index: `waiting`, and `settled` (resolved, timed out or cancelled, still kept). */
export interface TenantWaitCounts {
  tenant: string;
  waiting: number;
  settled: number;
}

/** Wait counts per tenant: one pipelined round trip of 2 × partitions ZLEXCOUNTs per tenant (O(log n) each). */
export async function countWaits(store: Store, tenants: string[]): Promise<TenantWaitCounts[]> {
  const k = store.keys;
  const commands: BatchCommand[] = tenants.flatMap((tenant) => {
    // the tenant's 4-character index key (configured tenants never share one: see parseConfig)
    const prefix = k.indexKey(tenant);
    return k.allPartitions().flatMap((p) => {
      const keys = k.partition(p);
      return [keys.waiting, keys.done].map((key) => ({
        key,
        add: (pl: ChainableCommander) => pl.zlexcount(key, `[${prefix}`, `(${prefix}\xff`),
      }));
    });
  });
  const replies = await execBatch(store.redis, commands);
  const per = k.partitions * 2;
  return tenants.map((tenant, t) => {
    let waiting = 0;
    let settled = 0;
    for (let i = 0; i < per; i++) {
      const [err, n] = replies[t * per + i] ?? [null, 0];
      if (err) throw err;
      if (i % 2 === 0) waiting += Number(n);
      else settled += Number(n);
    }
    return { tenant, waiting, settled };
  });
}

/** Waits of every tenant whose deadline has passed (on the Redis clock) but that no timeout has settled yet. */
export async function overdueWaits(store: Store): Promise<number> {
  const [sec] = (await store.redis.time()) as [string | number, string | number];
  const now = Number(sec) * 1000;
  const replies = await execBatch(
    store.redis,
    store.keys.allPartitions().map((p) => {
      const key = store.keys.partition(p).deadlines;
      return { key, add: (pl) => pl.zcount(key, "-inf", now) };
    }),
  );
  return replies.reduce((sum, [err, n]) => {
    if (err) throw err;
    return sum + Number(n);
  }, 0);
}

interface TenantsCursor {
  t: number;
  c: string | null;
}

function decodeTenantsCursor(raw: string | undefined): { t: number; inner: ListCursor } {
  if (!raw) return { t: 0, inner: { s: 0, m: "" } };
  let c: TenantsCursor;
  try {
    c = JSON.parse(Buffer.from(raw, "base64url").toString()) as TenantsCursor;
  } catch {
    throw invalidCursor();
  }
  if (!c || !Number.isInteger(c.t) || c.t < 0 || (c.c !== null && typeof c.c !== "string")) throw invalidCursor();
  return { t: c.t, inner: decodeCursor(c.c ?? undefined) };
}

/**
 * Waits of several tenants (in the order given) matching a filter, a page at a time:
 * each tenant's waits as `listWaits` walks them, the cursor naming the tenant and
 * its own cursor. One request's budget (`maxListScan` index entries, `maxListPageBytes`
 * read and answered) is shared by every tenant it walks, so a page may end early, even
 * empty, with a `nextCursor`; null only when every tenant is done.
 */
export async function listWaitsOfTenants(
  store: Store,
  tenants: string[],
  filter: WaitFilter,
  opts: { limit: number; cursor?: string; lease?: ListLease },
): Promise<WaitPage> {
  const cur = decodeTenantsCursor(opts.cursor);
  const budget = listBudget(store.config, opts.limit, opts.lease);
  const waits: WaitPage["waits"] = [];
  let t = cur.t;
  let inner: ListCursor = cur.inner;
  while (t < tenants.length) {
    const next = await scanTenant(store, tenants[t] as string, filter, inner, budget, waits);
    if (next !== null) {
      // the page or the budget is spent inside this tenant
      const c: TenantsCursor = { t, c: encodeCursor(next) };
      return { waits, nextCursor: Buffer.from(JSON.stringify(c)).toString("base64url") };
    }
    t++;
    inner = { s: 0, m: "" };
  }
  return { waits, nextCursor: null };
}

/** A refused event as remembered for `explain` (no payload). */
export interface RecentRejection {
  tenant: string;
  eventType: string;
  correlationId: string;
  producer: string;
  eventId: string | null;
  reason: string;
  detail: string | null;
  at: string;
}

/**
 * The most recent refusals (newest first), of one tenant or of all. Bounded: one
 * HSCAN step of at most `perPartition` match keys per partition (the refusal records
 * are capped per match key and expire with retention), so a huge history is sampled,
 * never loaded whole.
 */
export async function recentRejections(
  store: Store,
  tenant: string | null,
  opts: { limit?: number; perPartition?: number } = {},
): Promise<RecentRejection[]> {
  const limit = opts.limit ?? 100;
  const perPartition = opts.perPartition ?? 500;
  const match = tenant === null ? "*" : `${encodeParts(tenant).replace(/([*?[\]\\])/g, "\\$1")}*`;
  const replies = await execBatch(
    store.redis,
    store.keys.allPartitions().map((p) => {
      const key = store.keys.partition(p).rejected;
      return { key, add: (pl) => pl.hscan(key, "0", "MATCH", match, "COUNT", perPartition) };
    }),
  );
  const out: RecentRejection[] = [];
  for (const [err, reply] of replies) {
    if (err) throw err;
    const fields = ((reply as [string, string[]])[1] ?? []) as string[];
    for (let i = 0; i + 1 < fields.length; i += 2) {
      const [t = "", eventType = "", correlationId = ""] = decodeParts(fields[i] as string, 3);
      if (tenant !== null && t !== tenant) continue;
      let list: Array<{ pr: string; id?: string; reason: string; detail?: string; at: number }> = [];
      try {
        list = JSON.parse(fields[i + 1] as string);
      } catch {
        continue;
      }
      for (const r of list) {
        out.push({
          tenant: t,
          eventType,
          correlationId,
          producer: r.pr,
          eventId: r.id ?? null,
          reason: r.reason,
          detail: r.detail ?? null,
          at: iso(r.at),
        });
      }
    }
  }
  return out.sort((a, b) => (a.at < b.at ? 1 : a.at > b.at ? -1 : 0)).slice(0, limit);
}
