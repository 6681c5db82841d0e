/**
 * Read-only views the operator console and the metrics need beyond the listing and
 * `explain`: wait counts per tenant and in all from the index sizes (ZLEXCOUNT, ZCARD,
 * never loading a wait), a listing that walks several tenants with one cursor, overdue
 * waits, and the recent refusals. Nothing here changes state, and nothing walks the
 * keyspace.
 */
import type { ChainableCommander } from "ioredis";
import { type BatchCommand, execBatch } from "../batch.js";
import { decodeParts, encodeParts, prefixRange } from "../encoding.js";
import { extraMembersField, indexKey, legacyIndexKey } from "../formats/index-members.js";
import { iso } from "../formats/iso.js";
import type { ListLease } from "../list-gate.js";
import type { Store } from "../store.js";
import { countDue } from "./deadlines.js";
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
import type { ReaderSource } from "./source.js";

/** Waits of one tenant by index: `waiting`, and `settled` (resolved, timed out or cancelled, still kept). */
export interface TenantWaitCounts {
  tenant: string;
  waiting: number;
  settled: number;
}

/**
 * Wait counts per tenant: one pipelined round trip of 2 × partitions ZLEXCOUNTs per
 * tenant (O(log n) each), under the tenant's index key (exact: it is the encoded
 * tenant), twice that while the indexes may hold legacy members (KeyLayout.legacyIndex):
 * also under its legacy one (waits indexed before 2026-12-01: a legacy digest
 * two tenants share counts the waits of both, until those waits leave by retention);
 * and one HMGET per partition of the counts of any-of waits' extra members
 * (formats/index-members.ts extraMembersField), subtracted: an any-of wait counts once.
 */
export async function countWaits(src: ReaderSource, tenants: string[]): Promise<TenantWaitCounts[]> {
  const k = src.keys;
  const commands: BatchCommand[] = tenants.flatMap((tenant) => {
    const prefixes = k.legacyIndex ? [indexKey(tenant), legacyIndexKey(tenant)] : [indexKey(tenant)];
    const extra = [extraMembersField("w", tenant), extraMembersField("d", tenant)];
    return k.allPartitions().flatMap((p) => {
      const keys = k.partition(p);
      return [
        ...prefixes.flatMap((prefix) =>
          [keys.waiting, keys.done].map((key) => ({
            key,
            add: (pl: ChainableCommander) => pl.zlexcount(key, ...prefixRange(prefix)),
          })),
        ),
        { key: keys.waits, add: (pl: ChainableCommander) => pl.hmget(keys.waits, ...extra) },
      ];
    });
  });
  const replies = await execBatch(src.redis, commands);
  // per partition: (waiting, done) per prefix, then the extra members (waiting, done)
  const step = 2 * (k.legacyIndex ? 2 : 1) + 1;
  const per = k.partitions * step;
  return tenants.map((tenant, t) => {
    let waiting = 0;
    let settled = 0;
    for (let i = 0; i < per; i++) {
      const [err, n] = replies[t * per + i] ?? [null, 0];
      if (err) throw err;
      const at = i % step;
      if (at === step - 1) {
        const [w, d] = (n as Array<string | null>) ?? [];
        waiting -= Number(w ?? 0);
        settled -= Number(d ?? 0);
      } else if (at % 2 === 0) waiting += Number(n);
      else settled += Number(n);
    }
    return { tenant, waiting: Math.max(0, waiting), settled: Math.max(0, settled) };
  });
}

/**
 * Waiting and settled (still retained) waits of the deployment, from the index
 * cardinalities (ZCARD per partition, one pipelined round trip) less the any-of waits'
 * extra members (formats/index-members.ts extraMembersField). A partition whose read
 * fails counts 0: the metrics scrape reports what it could read.
 */
export async function waitTotals(src: ReaderSource): Promise<{ waiting: number; settled: number }> {
  const results = await execBatch(
    src.redis,
    src.keys.allPartitions().flatMap((p) => {
      const k = src.keys.partition(p);
      return [
        { key: k.waiting, add: (pl: ChainableCommander) => pl.zcard(k.waiting) },
        { key: k.done, add: (pl: ChainableCommander) => pl.zcard(k.done) },
        {
          key: k.waits,
          add: (pl: ChainableCommander) => pl.hmget(k.waits, extraMembersField("w"), extraMembersField("d")),
        },
      ];
    }),
  );
  let waiting = 0;
  let settled = 0;
  const reply = (i: number): [Error | null, unknown] => (results[i] as [Error | null, unknown]) ?? [null, null];
  for (let i = 0; i < results.length; i += 3) {
    const [ew, w] = reply(i);
    const [ed, d] = reply(i + 1);
    const [ex, extra] = reply(i + 2);
    // (a partition read in part counts what was read: its extra members only with its index)
    const [xw = 0, xd = 0] = ex ? [] : ((extra as Array<string | null>) ?? []).map((v) => Number(v ?? 0));
    if (!ew) waiting += Math.max(0, Number(w ?? 0) - xw);
    if (!ed) settled += Math.max(0, Number(d ?? 0) - xd);
  }
  return { waiting, settled };
}

/** Waits of every tenant whose deadline has passed (on the Redis clock) but that no timeout has settled yet. */
export async function overdueWaits(src: ReaderSource): Promise<number> {
  const [sec] = (await src.redis.time()) as [string | number, string | number];
  return countDue(src, Number(sec) * 1000);
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
  src: ReaderSource,
  tenant: string | null,
  opts: { limit?: number; perPartition?: number } = {},
): Promise<RecentRejection[]> {
  const limit = opts.limit ?? 100;
  const perPartition = opts.perPartition ?? 500;
  const match = tenant === null ? "*" : `${encodeParts(tenant).replace(/([*?[\]\\])/g, "\\$1")}*`;
  const replies = await execBatch(
    src.redis,
    src.keys.allPartitions().map((p) => {
      const key = src.keys.partition(p).rejected;
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
