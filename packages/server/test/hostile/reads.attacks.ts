/**
 * Expensive reads (issue #15, point 4): list requests whose filter no index answers,
 * walked to the end through their cursors by several clients at once, and large pages
 * of waits with big metadata. Each attack returns what the test (and a benchmark)
 * asserts on: every page's time and size, and the wait ids reached.
 *
 * The seeding helpers write straight through `Store.register` (the server's Redis and
 * prefix, pipelined by running many registrations at once): 100k waits over HTTP
 * would take most of a test's time budget.
 */

import type { Store } from "@rendezvous/engine";
import type { WaitSpec } from "@rendezvous/protocol";
import { ATTACKER, send } from "./harness.js";

/** One answered page of a listing. */
export interface PageAnswer {
  status: number;
  ms: number;
  bytes: number;
  waits: number;
}

export interface Walk {
  path: string;
  pages: PageAnswer[];
  /** the wait ids of every page, in order (duplicates kept, so a test can see them) */
  ids: string[];
  /** the first non-200 answer's body, if any */
  error: string | null;
}

/**
 * Follows a listing's cursors from the attacker's address until `nextCursor` is null (or
 * `maxPages`, or an error): one request at a time, each timed.
 */
export async function walkListing(
  base: string,
  path: string,
  hostKey: string,
  opts: { maxPages?: number; localAddress?: string } = {},
): Promise<Walk> {
  const pages: PageAnswer[] = [];
  const ids: string[] = [];
  let cursor: string | null = null;
  const sep = path.includes("?") ? "&" : "?";
  do {
    const answer = await send(base, "GET", cursor ? `${path}${sep}cursor=${encodeURIComponent(cursor)}` : path, {
      headers: { authorization: `Bearer ${hostKey}` },
      localAddress: opts.localAddress ?? ATTACKER,
    });
    if (answer.status !== 200) {
      pages.push({ status: answer.status, ms: answer.ms, bytes: answer.body.length, waits: 0 });
      return { path, pages, ids, error: answer.body.slice(0, 500) };
    }
    const body = JSON.parse(answer.body) as { waits: Array<{ id: string }>; nextCursor: string | null };
    pages.push({ status: 200, ms: answer.ms, bytes: Buffer.byteLength(answer.body), waits: body.waits.length });
    for (const w of body.waits) ids.push(w.id);
    cursor = body.nextCursor;
  } while (cursor !== null && pages.length < (opts.maxPages ?? 10_000));
  return { path, pages, ids, error: cursor === null ? null : `stopped after ${pages.length} pages` };
}

/** Several listings walked at once, each by its own client. */
export function concurrentListings(
  base: string,
  hostKey: string,
  paths: string[],
  opts: { maxPages?: number } = {},
): Promise<Walk[]> {
  return Promise.all(paths.map((path) => walkListing(base, path, hostKey, opts)));
}

/** Runs `count` tasks, `parallel` at a time. */
async function pool(count: number, parallel: number, task: (i: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(parallel, count) }, async () => {
      while (next < count) await task(next++);
    }),
  );
}

/** What {@link seedUnindexed} stored: the ids each unindexed filter must reach. */
export interface UnindexedSeed {
  total: number;
  /** ids of the waits with correlation id `needle` (of several types and states) */
  needles: string[];
  /** ids of the cancelled waits (the settled index holds many resolved ones beside them) */
  cancelled: string[];
  ms: number;
}

/**
 * `total` waits of one tenant: one in 2000 with correlation id `needle` (under 8 event
 * types); the first 30% delivered (resolved), so the settled index is large; one in
 * 1000 of the rest cancelled. The store's config must allow a deliver of that size
 * (`fanoutCap` at least 30% of `total` / partitions).
 */
export async function seedUnindexed(
  store: Store,
  tenant: string,
  opts: { total: number; parallel?: number },
): Promise<UnindexedSeed> {
  const started = performance.now();
  const settled = Math.floor(opts.total * 0.3);
  const ids: string[] = new Array(opts.total);
  const needles: string[] = [];
  await pool(opts.total, opts.parallel ?? 256, async (i) => {
    const needle = i % 2000 === 1234;
    const spec: WaitSpec = {
      runId: `run-${Math.floor(i / 100)}`,
      position: `p${i % 100}`,
      eventType: i < settled ? "bulk.settle" : `job.t${i % 8}`,
      correlationId: needle ? "needle" : `c-${i}`,
    };
    const { wait } = await store.register(tenant, spec);
    ids[i] = wait.id;
    if (needle) needles.push(wait.id);
  });
  const delivered = await store.deliver(tenant, { eventType: "bulk.settle", all: true });
  if (delivered.delivered.length !== settled) {
    throw new Error(`delivered ${delivered.delivered.length} of ${settled}: raise fanoutCap`);
  }
  const cancelled: string[] = [];
  for (let i = settled; i < opts.total; i++) {
    if (i % 1000 === 500) cancelled.push((await store.cancel(tenant, ids[i] as string)).id);
  }
  return { total: opts.total, needles, cancelled, ms: performance.now() - started };
}

/** `count` waits of one tenant whose metadata is `metadataBytes` of JSON each; their ids. */
export async function seedLargeMetadata(
  store: Store,
  tenant: string,
  opts: { count: number; metadataBytes: number; parallel?: number },
): Promise<{ ids: string[]; ms: number }> {
  const started = performance.now();
  const metadata = { x: "y".repeat(opts.metadataBytes - '{"x":""}'.length) };
  const ids: string[] = [];
  await pool(opts.count, opts.parallel ?? 8, async (i) => {
    const { wait } = await store.register(tenant, {
      runId: "big-run",
      position: `p${i}`,
      eventType: "big.meta",
      correlationId: `b-${i}`,
      metadata,
    });
    ids.push(wait.id);
  });
  return { ids, ms: performance.now() - started };
}
