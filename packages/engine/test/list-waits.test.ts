/**
 * Bounded list requests (docs/api.md, Bounded reads): a filter the indexes cannot answer is
 * scanned at most `maxListScan` index entries per request, a page holds at most
 * `maxListPageBytes` of waits (at least one), and the cursors still reach every match
 * exactly once; wait metadata over `maxMetadataBytes` is refused with nothing stored.
 */

import { isRendezvousError, type Wait } from "@rendezvous/protocol";
import { describe, expect, it } from "vitest";
import { listWaits, listWaitsOfTenants, type Store, type WaitFilter, type WaitPage } from "../src/index.js";
import { makeStore } from "./helpers.js";

const spec = (runId: string, position: string, correlationId: string, eventType = "job.done") => ({
  runId,
  position,
  eventType,
  correlationId,
});

/** Every page of a listing, following the cursors (bounded: a runaway cursor fails the test). */
async function allPages(next: (cursor: string | undefined) => Promise<WaitPage>, maxPages = 1000): Promise<WaitPage[]> {
  const pages: WaitPage[] = [];
  let cursor: string | undefined;
  do {
    const page = await next(cursor);
    pages.push(page);
    cursor = page.nextCursor ?? undefined;
  } while (cursor && pages.length < maxPages);
  expect(cursor, "the listing ended").toBeUndefined();
  return pages;
}

const ids = (pages: WaitPage[]) => pages.flatMap((p) => p.waits.map((w) => w.id));

function list(store: Store, filter: WaitFilter, limit: number) {
  return (cursor: string | undefined) => listWaits(store, "acme", filter, { limit, cursor });
}

describe("bounded list requests", () => {
  it("an unindexed filter scans at most maxListScan entries a request: empty pages with a cursor, every match once", async () => {
    const h = makeStore({ partitions: 4, maxListScan: 5 });
    const needles: string[] = [];
    for (let i = 0; i < 40; i++) {
      const needle = i % 13 === 6;
      const { wait } = await h.store.register(
        "acme",
        spec("run-1", `p${i}`, needle ? "needle" : `c${i}`, needle ? `t${i}.x` : "job.done"),
      );
      if (needle) needles.push(wait.id);
    }
    await h.store.register("globex", spec("run-1", "p", "needle", "t6.x"));
    expect(needles).toHaveLength(3);

    // correlationId without eventType: no index narrows it (the 40 entries are examined, 5 a page)
    const pages = await allPages(list(h.store, { correlationId: "needle" }, 1));
    expect(ids(pages).sort()).toEqual([...needles].sort());
    expect(pages.length).toBeGreaterThanOrEqual(40 / 5);
    const empty = pages.filter((p) => p.waits.length === 0 && p.nextCursor !== null);
    expect(empty.length, "pages with no wait but a cursor").toBeGreaterThan(0);
    expect(pages.at(-1)?.nextCursor).toBeNull();

    // a larger limit changes nothing about the bound: still at most 5 entries a request
    const wide = await allPages(list(h.store, { correlationId: "needle" }, 500));
    expect(ids(wide).sort()).toEqual([...needles].sort());
    expect(wide.length).toBeGreaterThanOrEqual(40 / 5);

    // a settled state is not an index either: the settled index is scanned, 5 a request
    const cancelled: string[] = [];
    for (const [i, id] of needles.entries()) if (i !== 1) cancelled.push((await h.store.cancel("acme", id)).id);
    const byState = await allPages(list(h.store, { state: "cancelled" }, 50));
    expect(ids(byState).sort()).toEqual([...cancelled].sort());
    const waiting = await allPages(list(h.store, { state: "waiting" }, 500));
    expect(ids(waiting)).toHaveLength(40 - cancelled.length);
    expect(new Set(ids(waiting)).size).toBe(40 - cancelled.length);
  });

  it("a match key is served through its index: one page however many other waits there are", async () => {
    const h = makeStore({ partitions: 4, maxListScan: 5 });
    for (let i = 0; i < 30; i++) await h.store.register("acme", spec("run-1", `p${i}`, `c${i}`));
    const a = await h.store.register("acme", spec("run-2", "a", "the-key"));
    const b = await h.store.register("acme", spec("run-3", "b", "the-key"));
    const page = await listWaits(h.store, "acme", { eventType: "job.done", correlationId: "the-key" }, { limit: 50 });
    expect(page.waits.map((w) => w.id).sort()).toEqual([a.wait.id, b.wait.id].sort());
    expect(page.nextCursor).toBeNull();
    const run = await listWaits(h.store, "acme", { runId: "run-2" }, { limit: 50 });
    expect(run).toEqual({ waits: [a.wait], nextCursor: null });
  });

  it("a page stops adding waits at maxListPageBytes, holding at least one; large metadata gets a smaller page", async () => {
    const h = makeStore({ partitions: 4, maxListPageBytes: 20_000, maxMetadataBytes: 65_536 });
    const small: string[] = [];
    const big: string[] = [];
    for (let i = 0; i < 12; i++) {
      small.push(
        (await h.store.register("acme", { ...spec("run-s", `p${i}`, `s${i}`), metadata: { x: "s".repeat(6000) } })).wait
          .id,
      );
    }
    for (let i = 0; i < 4; i++) {
      big.push(
        (await h.store.register("acme", { ...spec("run-b", `p${i}`, `b${i}`), metadata: { x: "b".repeat(30_000) } }))
          .wait.id,
      );
    }
    const bytes = (waits: Wait[]) => waits.reduce((n, w) => n + Buffer.byteLength(JSON.stringify(w)) + 1, 0);

    const pages = await allPages(list(h.store, { runId: "run-s" }, 500));
    expect(ids(pages).sort()).toEqual([...small].sort());
    for (const p of pages) {
      expect(p.waits.length).toBeLessThanOrEqual(3); // 3 × ~6 KB fit in 20,000 bytes, 4 do not
      expect(bytes(p.waits)).toBeLessThanOrEqual(20_000);
    }
    expect(pages.filter((p) => p.waits.length > 0).length).toBeGreaterThanOrEqual(4);

    // a wait larger than the bound is a page of its own
    const large = await allPages(list(h.store, { runId: "run-b" }, 500));
    expect(ids(large).sort()).toEqual([...big].sort());
    for (const p of large) expect(p.waits.length).toBeLessThanOrEqual(1);
  });

  it("refuses metadata over maxMetadataBytes with payload_too_large, storing nothing", async () => {
    const h = makeStore({ partitions: 4, maxMetadataBytes: 1024 });
    const over = { ...spec("run-m", "p", "m"), metadata: { x: "é".repeat(600) } }; // 1,208 bytes as UTF-8
    await expect(h.store.register("acme", over)).rejects.toSatisfy(
      (e) => isRendezvousError(e, "payload_too_large") && e.details.maxMetadataBytes === 1024,
    );
    expect((await listWaits(h.store, "acme", { runId: "run-m" }, { limit: 10 })).waits).toEqual([]);
    // the run position was not claimed: another definition of it registers (201), not wait_conflict
    const other = await h.store.register("acme", { ...spec("run-m", "p", "other"), metadata: { x: "a".repeat(1000) } });
    expect(other.created).toBe(true);

    // the default: 64 KiB
    const d = makeStore({ partitions: 4 });
    expect(d.store.config.maxMetadataBytes).toBe(65_536);
    await d.store.register("acme", { ...spec("run-d", "ok", "d"), metadata: { x: "a".repeat(60_000) } });
    await expect(
      d.store.register("acme", { ...spec("run-d", "big", "d"), metadata: { x: "a".repeat(70_000) } }),
    ).rejects.toSatisfy((e) => isRendezvousError(e, "payload_too_large"));
  });

  it("decodes a cursor of the former format, and refuses a malformed one with invalid_request", async () => {
    const h = makeStore({ partitions: 4 });
    const made: string[] = [];
    for (let i = 0; i < 6; i++) made.push((await h.store.register("acme", spec("run-1", `p${i}`, `c${i}`))).wait.id);
    const first = await listWaits(h.store, "acme", {}, { limit: 2 });
    // {s, m}: an index range and the last member examined in it, base64url JSON, as before
    const cursor = JSON.parse(Buffer.from(first.nextCursor as string, "base64url").toString());
    expect(Object.keys(cursor).sort()).toEqual(["m", "s"]);
    const rest = await allPages(list(h.store, {}, 2), 10);
    expect(new Set(ids(rest)).size).toBe(6);
    expect(ids(rest)).toHaveLength(6);
    const fromStart = await listWaits(
      h.store,
      "acme",
      {},
      {
        limit: 100,
        cursor: Buffer.from(JSON.stringify({ s: 0, m: "" })).toString("base64url"),
      },
    );
    expect(fromStart.waits.map((w) => w.id).sort()).toEqual([...made].sort());
    for (const bad of ["garbage!", Buffer.from('{"s":-1,"m":""}').toString("base64url"), "bnVsbA"]) {
      await expect(listWaits(h.store, "acme", {}, { limit: 5, cursor: bad })).rejects.toSatisfy((e) =>
        isRendezvousError(e, "invalid_request"),
      );
    }
  });
});

describe("the console's listing across tenants", () => {
  it("shares one request's scan budget between tenants and still lists every wait once", async () => {
    const h = makeStore({
      partitions: 2,
      maxListScan: 4,
      tenants: { acme: {}, globex: {}, initech: {} },
    });
    const made: string[] = [];
    for (const tenant of ["acme", "globex", "initech"]) {
      for (let i = 0; i < 5; i++) made.push((await h.store.register(tenant, spec("run", `p${i}`, `c${i}`))).wait.id);
    }
    // two tenants without waits in a row: 8 empty index ranges, more than a page's budget
    const tenants = ["acme", "empty-1", "empty-2", "globex", "initech"];
    const pages = await allPages((cursor) => listWaitsOfTenants(h.store, tenants, {}, { limit: 50, cursor }));
    expect(ids(pages).sort()).toEqual([...made].sort());
    for (const p of pages) expect(p.waits.length).toBeLessThanOrEqual(4);
    // each index range read costs the budget, so some page spends all of it on empty ranges
    expect(pages.some((p) => p.waits.length === 0 && p.nextCursor !== null)).toBe(true);

    const cancelled = await allPages((cursor) =>
      listWaitsOfTenants(h.store, tenants, { state: "cancelled" }, { limit: 50, cursor }),
    );
    expect(ids(cancelled)).toEqual([]);
    await expect(listWaitsOfTenants(h.store, tenants, {}, { limit: 5, cursor: "not-a-cursor" })).rejects.toSatisfy(
      (e) => isRendezvousError(e, "invalid_request"),
    );
  });
});
