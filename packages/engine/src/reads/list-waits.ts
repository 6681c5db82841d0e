import type { Wait, WaitState } from "@rendezvous/protocol";
import { RendezvousError } from "@rendezvous/protocol";
import type { Config } from "../config.js";
import {
  indexKey,
  legacyIndexKey,
  runDigest,
  waitIdOfIndexMember,
  waitIdOfRunMember,
} from "../formats/index-members.js";
import { parseWaitRecord, toWait } from "../formats/wait-record.js";
import type { ListLease } from "../list-gate.js";
import type { Store } from "../store.js";

export interface WaitFilter {
  runId?: string;
  state?: WaitState;
  eventType?: string;
  correlationId?: string;
}

export interface WaitPage {
  waits: Wait[];
  /** null only when the listing is complete */
  nextCursor: string | null;
}

/** Where a tenant's listing resumes: source `s` (see {@link sourcesOf}), after member `m` ("" = its start). */
export interface ListCursor {
  s: number;
  m: string;
}

/** What one list request may still spend; shared by the tenants of a console listing. */
export interface ListBudget {
  /** waits the page may still take */
  waits: number;
  /** index entries it may still examine (an index read that finds none costs one) */
  entries: number;
  /** bytes of wait records it may still read (the first record is read whatever its size) */
  readBytes: number;
  /** bytes (serialized) the page's waits may still take (the first wait is taken whatever its size) */
  pageBytes: number;
  /** whether a record has been read yet */
  read: boolean;
  /** whether a wait has been taken yet */
  taken: boolean;
  /** the request's share of the process-wide gate, when there is one */
  lease?: ListLease;
}

/** The budget of one list request asking for `limit` waits. */
export function listBudget(
  config: Pick<Config, "maxListScan" | "maxListPageBytes">,
  limit: number,
  lease?: ListLease,
): ListBudget {
  return {
    lease,
    waits: limit,
    entries: config.maxListScan,
    readBytes: config.maxListPageBytes,
    pageBytes: config.maxListPageBytes,
    read: false,
    taken: false,
  };
}

/** Most index entries read in one ZRANGEBYLEX (the first read of a request reads fewer: see scanTenant). */
const MAX_RANGE = 500;

/** One index range to walk: a lex zset and the prefix of its members. */
interface Source {
  key: string;
  prefix: string;
  /** the partition of a wait index (its members name wait ids of it); null = the run index */
  partition: number | null;
}

/**
 * The index ranges that hold every wait of the tenant matching the filter, in a fixed
 * order (a cursor names a position in it): the run index of the run; else, per
 * partition, the waiting and/or settled index under the tenant, (tenant, type) or match
 * key prefix: first under the legacy index key (waits indexed before 2026-12-01, so a
 * cursor given out before the change continues where it was; only while the indexes may
 * hold legacy members, KeyLayout.legacyIndex), then under the current one.
 */
function sourcesOf(store: Store, tenant: string, filter: WaitFilter): Source[] {
  const k = store.keys;
  if (filter.runId !== undefined) {
    const p = k.partition(k.runPartition(tenant, filter.runId));
    return [{ key: p.runs, prefix: runDigest(tenant, filter.runId), partition: null }];
  }
  const prefix = indexKey(tenant, filter.eventType, filter.eventType === undefined ? undefined : filter.correlationId);
  const partitions =
    filter.eventType !== undefined && filter.correlationId !== undefined
      ? [k.matchPartition(tenant, filter.eventType, filter.correlationId)]
      : k.allPartitions();
  const sources: Source[] = [];
  const layouts = k.legacyIndex ? [legacyIndexKey(tenant, prefix), prefix] : [prefix];
  for (const layoutPrefix of layouts) {
    for (const p of partitions) {
      const keys = k.partition(p);
      if (filter.state === undefined || filter.state === "waiting")
        sources.push({ key: keys.waiting, prefix: layoutPrefix, partition: p });
      if (filter.state !== "waiting") sources.push({ key: keys.done, prefix: layoutPrefix, partition: p });
    }
  }
  return sources;
}

function matches(w: Wait, tenant: string, filter: WaitFilter): boolean {
  // index prefixes are digests: a wait under one may belong to another tenant, type, match key or run
  if (w.tenant !== tenant) return false;
  if (filter.state !== undefined && w.state !== filter.state) return false;
  if (filter.eventType !== undefined && !(w.eventTypes ?? [w.eventType]).includes(filter.eventType)) return false;
  if (filter.correlationId !== undefined && w.correlationId !== filter.correlationId) return false;
  if (filter.runId !== undefined && w.runId !== filter.runId) return false;
  return true;
}

/**
 * An any-of wait is indexed under each of its types: a listing not narrowed to one type
 * takes it under its first type's member only, so it is listed once.
 */
function listedHere(w: Wait, member: string, src: Source, filter: WaitFilter): boolean {
  if (src.partition === null || filter.eventType !== undefined || (w.eventTypes?.length ?? 1) < 2) return true;
  return member.startsWith(indexKey(w.tenant, w.eventType, w.correlationId));
}

/** Stored sizes (HSTRLEN, 0 = gone) of wait records, in one round trip. */
async function recordSizes(store: Store, ids: string[]): Promise<number[]> {
  const replies = await store.perWaitRecord(ids, (pipeline, key, id) => pipeline.hstrlen(key, id));
  return replies.map(([err, n]) => {
    if (err) throw err;
    return Number(n) || 0;
  });
}

/**
 * Wait records by id in one round trip, as Buffers: a large record then waits for its
 * reply outside the JS heap, and becomes a string only while it is parsed.
 */
async function readWaits(store: Store, ids: string[]): Promise<Array<Wait | null>> {
  if (ids.length === 0) return [];
  const replies = await store.perWaitRecord(ids, (pipeline, key, id) => pipeline.hgetBuffer(key, id));
  return replies.map(([err, raw], i) => {
    if (err) throw err;
    if (!Buffer.isBuffer(raw) || raw.length === 0) return null;
    return toWait(ids[i] as string, parseWaitRecord(raw.toString()));
  });
}

/** Bytes a wait adds to a page: its JSON and a separating comma. */
function pageSize(w: Wait): number {
  return Buffer.byteLength(JSON.stringify(w)) + 1;
}

/**
 * Walks one tenant's matching waits from `cursor` into `out`, spending `budget`.
 * Returns where to resume, or null when the tenant's listing is complete.
 */
export async function scanTenant(
  store: Store,
  tenant: string,
  filter: WaitFilter,
  cursor: ListCursor,
  budget: ListBudget,
  out: Wait[],
): Promise<ListCursor | null> {
  const sources = sourcesOf(store, tenant, filter);
  let s = cursor.s;
  let after = cursor.m;
  // start with about the page's size; read more at a time while ranges come back without filling it
  let range = Math.max(budget.waits, 32);
  while (s < sources.length) {
    if (budget.waits <= 0 || budget.entries <= 0) return { s, m: after };
    const src = sources[s] as Source;
    const take = Math.min(budget.entries, range, MAX_RANGE);
    range *= 2;
    const from = after ? `(${after}` : `[${src.prefix}`;
    const members = await store.redis.zrangebylex(src.key, from, `(${src.prefix}\xff`, "LIMIT", 0, take);
    budget.entries -= Math.max(1, members.length);
    if (members.length === 0) {
      s++;
      after = "";
      continue;
    }
    const ids = members.map((m) =>
      src.partition === null ? waitIdOfRunMember(m) : waitIdOfIndexMember(src.partition, m),
    );
    // the records this request can still afford to read, in order
    const sizes = await recordSizes(store, ids);
    let n = 0;
    let bytes = 0;
    while (n < ids.length) {
      const size = sizes[n] as number;
      if (bytes + size > budget.readBytes && (budget.read || n > 0)) break;
      bytes += size;
      n++;
    }
    if (budget.lease && n > 0) {
      // the process-wide gate may let fewer through (holding none, this request waits for one)
      n = await budget.lease.admit(sizes.slice(0, n));
      bytes = sizes.slice(0, n).reduce((a, b) => a + b, 0);
    }
    budget.readBytes -= bytes;
    if (n > 0) budget.read = true;
    const found = await readWaits(store, ids.slice(0, n));
    for (let i = 0; i < n; i++) {
      const w = found[i];
      if (w && matches(w, tenant, filter) && listedHere(w, members[i] as string, src, filter)) {
        const size = pageSize(w);
        // the page is full: this wait opens the next one
        if (size > budget.pageBytes && budget.taken) return { s, m: after };
        budget.pageBytes -= size;
        budget.taken = true;
        budget.waits--;
        out.push(w);
      }
      after = members[i] as string;
      if (budget.waits <= 0) break;
    }
    const examinedAll = after === members[members.length - 1];
    if (!examinedAll) return { s, m: after };
    if (members.length < take) {
      // the range is exhausted
      s++;
      after = "";
    }
  }
  return null;
}

export function encodeCursor(c: ListCursor): string {
  return Buffer.from(JSON.stringify(c)).toString("base64url");
}

/** A cursor of {@link encodeCursor}; absent = the start. @throws RendezvousError invalid_request */
export function decodeCursor(raw: string | undefined): ListCursor {
  if (!raw) return { s: 0, m: "" };
  try {
    const c = JSON.parse(Buffer.from(raw, "base64url").toString()) as ListCursor;
    if (Number.isInteger(c.s) && c.s >= 0 && typeof c.m === "string") return { s: c.s, m: c.m };
  } catch {
    // fall through
  }
  throw invalidCursor();
}

export function invalidCursor(): RendezvousError {
  return new RendezvousError("invalid_request", "invalid cursor", {
    issues: [{ path: ["cursor"], message: "invalid" }],
  });
}

/**
 * The waits of a tenant matching a filter, a page at a time, with bounded work per
 * request (see the top of this file). `nextCursor` is null only when the listing is
 * complete; a page before that may hold fewer than `limit` waits, or none.
 */
export async function listWaits(
  store: Store,
  tenant: string,
  filter: WaitFilter,
  opts: { limit: number; cursor?: string; lease?: ListLease },
): Promise<WaitPage> {
  const waits: Wait[] = [];
  const next = await scanTenant(
    store,
    tenant,
    filter,
    decodeCursor(opts.cursor),
    listBudget(store.config, opts.limit, opts.lease),
    waits,
  );
  return { waits, nextCursor: next === null ? null : encodeCursor(next) };
}
