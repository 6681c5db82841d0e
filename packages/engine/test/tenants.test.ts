/**
 * No tenant ceiling: the wait indexes name a tenant by its encoded name, so tenants need
 * no distinct digests; and waits indexed before the change (legacy members, under a
 * 12-character index key) stay readable, listable, countable and resolvable.
 */
import { describe, expect, it } from "vitest";
import { digest4, legacyIndexKey } from "../src/formats/index-members.js";
import { encodeParts, ensurePartitionCount, KeyLayout, listWaits, PartitionReader, parseConfig } from "../src/index.js";
import { event, type Harness, ingestOne, makeStore, matchOne } from "./helpers.js";

const spec = (runId: string, correlationId: string, extra: Record<string, unknown> = {}) => ({
  runId,
  position: "p",
  eventType: "job.done",
  correlationId,
  ...extra,
});

/** Names `tenant-<i>` (i < n) grouped by their legacy 4-character digest, only groups of two or more. */
function collidingTenants(n: number): string[][] {
  const groups = new Map<string, string[]>();
  for (let i = 0; i < n; i++) {
    const t = `tenant-${i}`;
    const d = digest4(encodeParts(t));
    const g = groups.get(d);
    if (g) g.push(t);
    else groups.set(d, [t]);
  }
  return [...groups.values()].filter((g) => g.length > 1);
}

/** Rewrites a wait's index member to the legacy layout, as the previous version wrote it. */
async function toLegacyMember(h: Harness, tenant: string, waitId: string, index: "waiting" | "done") {
  const p = h.store.keys.waitPartition(waitId) as number;
  const k = h.store.keys.partition(p);
  const key = index === "waiting" ? k.waiting : k.done;
  const body = waitId.slice(waitId.indexOf(".") + 1);
  const members = (await h.redis.zrange(key, "0", "-1")).filter((m) => m.endsWith(body));
  expect(members).toHaveLength(1);
  const member = members[0] as string;
  const encoded = encodeParts(tenant);
  expect(member.startsWith(encoded)).toBe(true);
  const legacy = legacyIndexKey(tenant, member.slice(0, -16)) + body;
  expect(legacy).toHaveLength(28);
  await h.redis.zrem(key, member);
  await h.redis.zadd(key, 0, legacy);
  return { key, legacy };
}

describe("tenants need no distinct digests", () => {
  it("the first two tenant-<i> names whose legacy digests collide are found by brute force, and the config takes both", () => {
    const [first] = collidingTenants(9_000);
    expect(first).toBeDefined();
    const [a, b] = first as string[];
    // (issue #18: measured with these names, the first collision comes at 8,945 tenants)
    expect(Math.max(Number(a?.slice(7)), Number(b?.slice(7))) + 1).toBe(8_945);
    const config = parseConfig({ tenants: { [a as string]: {}, [b as string]: {} } });
    expect(Object.keys(config.tenants).sort()).toEqual([a, b].sort());
  });

  it("two tenants whose legacy digests collide: each lists, counts and matches only its own waits", async () => {
    const h = makeStore({ partitions: 1 });
    const [a, b] = collidingTenants(9_000)[0] as [string, string];
    const reader = new PartitionReader(h.store);
    const wa = (await h.store.register(a, spec("run", "job-1"))).wait;
    const wb = (await h.store.register(b, spec("run", "job-1"))).wait;
    await h.store.register(b, spec("run-2", "job-2"));
    expect(await reader.countWaits([a, b])).toEqual([
      { tenant: a, waiting: 1, settled: 0 },
      { tenant: b, waiting: 2, settled: 0 },
    ]);
    expect((await listWaits(h.store, a, {}, { limit: 10 })).waits.map((w) => w.id)).toEqual([wa.id]);
    const r = await matchOne(h, await ingestOne(h, event("e1", "job-1"), a));
    expect(r).toMatchObject({ status: "matched", matched: [wa.id] });
    expect((await h.store.getWait(b, wb.id))?.state).toBe("waiting");
    expect(await reader.countWaits([a, b])).toEqual([
      { tenant: a, waiting: 0, settled: 1 },
      { tenant: b, waiting: 2, settled: 0 },
    ]);
  });
});

describe("100,000 tenants", () => {
  it("one wait each, through the Store: registration, match, listing and per-tenant counts are right for a sample that includes every tenant whose legacy digest collides", async () => {
    const N = 100_000;
    const h = makeStore({ partitions: 16 });
    const reader = new PartitionReader(h.store);
    const tenants = Array.from({ length: N }, (_, i) => `tenant-${i}`);
    const started = Date.now();
    const waitOf = new Map<string, string>();
    for (let i = 0; i < N; i += 2000) {
      // (one chunk's registrations go to Redis together: the Store sends a turn's commands in one write)
      const chunk = tenants.slice(i, i + 2000);
      const results = await Promise.all(chunk.map((t) => h.store.register(t, spec("run", "job-1"))));
      results.forEach((r, j) => {
        expect(r.created).toBe(true);
        waitOf.set(chunk[j] as string, r.wait.id);
      });
    }
    const registerMs = Date.now() - started;
    const colliding = collidingTenants(N).flat();
    // (by the birthday bound about N^2 / 2^25 pairs: some hundreds)
    expect(colliding.length).toBeGreaterThan(100);
    const sample = [...new Set([...colliding, ...tenants.filter((_, i) => i % 1000 === 0)])];
    const k = h.store.keys;
    const total = async (pick: "waiting" | "done") => {
      let n = 0;
      for (const p of k.allPartitions()) n += await h.redis.zcard(k.partition(p)[pick]);
      return n;
    };
    expect(await total("waiting")).toBe(N);
    expect(await reader.countWaits(sample)).toEqual(sample.map((tenant) => ({ tenant, waiting: 1, settled: 0 })));
    for (let i = 0; i < sample.length; i += 50) {
      await Promise.all(
        sample.slice(i, i + 50).map(async (t) => {
          const page = await listWaits(h.store, t, {}, { limit: 10 });
          expect(page.waits.map((w) => [w.tenant, w.id])).toEqual([[t, waitOf.get(t)]]);
          expect(page.nextCursor).toBeNull();
        }),
      );
    }
    const ingested = [];
    for (const t of sample) ingested.push(await ingestOne(h, event(`e-${t}`, "job-1"), t));
    for (let i = 0; i < sample.length; i++) {
      const t = sample[i] as string;
      expect(await matchOne(h, ingested[i] as Awaited<ReturnType<typeof ingestOne>>)).toMatchObject({
        status: "matched",
        matched: [waitOf.get(t)],
      });
    }
    expect(await reader.countWaits(sample)).toEqual(sample.map((tenant) => ({ tenant, waiting: 0, settled: 1 })));
    expect(await total("waiting")).toBe(N - sample.length);
    expect(await total("done")).toBe(sample.length);
    console.log(
      `100k tenants: registered in ${registerMs} ms; sample of ${sample.length} (${colliding.length} with a colliding legacy digest) checked in ${Date.now() - started - registerMs} ms`,
    );
  }, 240_000);
});

describe("a deployment created with the current layout reads no legacy range", () => {
  it("a fresh deployment records it; one created before keeps reading both layouts", async () => {
    const fresh = makeStore({ partitions: 2 });
    expect(fresh.store.keys.legacyIndex).toBe(true);
    await ensurePartitionCount(fresh.store);
    expect(fresh.store.keys.legacyIndex).toBe(false);
    expect(await fresh.redis.hget(fresh.store.keys.metaKey, "indexLayout")).toBe("2");
    // a second process of the same deployment reads the same
    const again = new KeyLayout(fresh.prefix, 2);
    await ensurePartitionCount({ redis: fresh.redis, keys: again });
    expect(again.legacyIndex).toBe(false);
    const old = makeStore({ partitions: 2 });
    // created before the change: the partition count is there, the layout is not
    await old.redis.hset(old.store.keys.metaKey, "partitions", "2");
    await ensurePartitionCount(old.store);
    expect(old.store.keys.legacyIndex).toBe(true);
  });

  it("without legacy members: event records carry no legacy key; match, listing, counts and delivery work", async () => {
    const h = makeStore({ partitions: 1 });
    await ensurePartitionCount(h.store);
    const reader = new PartitionReader(h.store);
    const w1 = (await h.store.register("acme", spec("r1", "job-1"))).wait;
    const w2 = (await h.store.register("acme", spec("r2", "job-2"))).wait;
    expect((await listWaits(h.store, "acme", {}, { limit: 10 })).waits.map((w) => w.id).sort()).toEqual(
      [w1.id, w2.id].sort(),
    );
    expect(await reader.countWaits(["acme"])).toEqual([{ tenant: "acme", waiting: 2, settled: 0 }]);
    const ingested = await ingestOne(h, event("e1", "job-1"));
    const raw = JSON.parse(String(await h.redis.hget(h.store.keys.partition(0).events, `e:${ingested.eventKey}`)));
    expect(raw.ix).toBe(h.store.keys.indexKey("acme", "job.done", "job-1"));
    expect(raw.ik).toBeUndefined();
    expect(await matchOne(h, ingested)).toMatchObject({ status: "matched", matched: [w1.id] });
    expect((await h.store.deliver("acme", { eventType: "job.done" })).delivered).toEqual([w2.id]);
    expect(await reader.countWaits(["acme"])).toEqual([{ tenant: "acme", waiting: 0, settled: 2 }]);
  });
});

describe("waits indexed before the change (legacy members)", () => {
  it("are listed, counted, matched (waiting and late), delivered, cancelled and expired", async () => {
    const h = makeStore({ partitions: 1, retentionMs: 1000 });
    const reader = new PartitionReader(h.store);
    const w1 = (await h.store.register("acme", spec("r1", "job-1"))).wait;
    const w2 = (await h.store.register("acme", spec("r2", "job-2"))).wait;
    const w3 = (await h.store.register("acme", spec("r3", "job-3"))).wait;
    const w4 = (await h.store.register("acme", spec("r4", "job-4"))).wait;
    for (const w of [w1, w2, w3, w4]) await toLegacyMember(h, "acme", w.id, "waiting");
    const k = h.store.keys.partition(0);

    // listing and counts under the legacy key
    const listed = await listWaits(h.store, "acme", {}, { limit: 10 });
    expect(listed.waits.map((w) => w.id).sort()).toEqual([w1.id, w2.id, w3.id, w4.id].sort());
    expect(
      (await listWaits(h.store, "acme", { eventType: "job.done", correlationId: "job-2" }, { limit: 10 })).waits,
    ).toHaveLength(1);
    expect(await reader.countWaits(["acme"])).toEqual([{ tenant: "acme", waiting: 4, settled: 0 }]);

    // an event resolves a legacy-indexed wait; the legacy member leaves, the done index has the current one
    const ingested = await ingestOne(h, event("e1", "job-1"));
    expect(await matchOne(h, ingested)).toMatchObject({ status: "matched", matched: [w1.id] });
    const all = async (key: string) => h.redis.zrange(key, "0", "-1");
    expect((await all(k.waiting)).some((m) => m.endsWith(w1.id.slice(-16)))).toBe(false);
    expect((await all(k.done)).filter((m) => m.endsWith(w1.id.slice(-16)))).toEqual([
      h.store.keys.indexKey("acme", "job.done", "job-1") + w1.id.slice(-16),
    ]);

    // an event record of the previous version (legacy `ik` only) matches a legacy-indexed wait too
    const old = await ingestOne(h, event("e2", "job-2"));
    const raw = JSON.parse(String(await h.redis.hget(k.events, `e:${old.eventKey}`)));
    delete raw.ix;
    await h.redis.hset(k.events, `e:${old.eventKey}`, JSON.stringify(raw));
    expect(await matchOne(h, old)).toMatchObject({ status: "matched", matched: [w2.id] });

    // a settled wait whose done member is legacy still gets late events
    await toLegacyMember(h, "acme", w2.id, "done");
    const late = await ingestOne(h, event("e3", "job-2"));
    expect(await matchOne(h, late)).toMatchObject({ status: "late", late: [w2.id] });

    // deliver and cancel
    expect((await h.store.deliver("acme", { eventType: "job.done", correlationId: "job-3" })).delivered).toEqual([
      w3.id,
    ]);
    expect((await h.store.cancel("acme", w4.id)).state).toBe("cancelled");
    expect(await h.redis.zcard(k.waiting)).toBe(0);
    expect(await reader.countWaits(["acme"])).toEqual([{ tenant: "acme", waiting: 0, settled: 4 }]);

    // expiry removes a legacy done member
    await toLegacyMember(h, "acme", w4.id, "done");
    h.tick(5_000);
    await h.store.expire(0);
    expect(await h.redis.zcard(k.done)).toBe(0);
    expect(await reader.countWaits(["acme"])).toEqual([{ tenant: "acme", waiting: 0, settled: 0 }]);
  });

  it("a list cursor given out before the change continues its walk", async () => {
    const h = makeStore({ partitions: 1 });
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      const { wait } = await h.store.register("acme", spec(`r${i}`, `job-${i}`));
      await toLegacyMember(h, "acme", wait.id, "waiting");
      ids.push(wait.id);
    }
    const fresh = (await h.store.register("acme", spec("r-new", "job-new"))).wait;
    // the cursor the previous version gave after 2 waits: source 0 (its waiting index), after the 2nd member
    const legacyMembers = (await h.redis.zrange(h.store.keys.partition(0).waiting, "0", "-1")).filter(
      (m) => !m.includes(":"),
    );
    const cursor = Buffer.from(JSON.stringify({ s: 0, m: legacyMembers[1] })).toString("base64url");
    const seen: string[] = [];
    let next: string | null = cursor;
    while (next !== null) {
      const page = await listWaits(h.store, "acme", {}, { limit: 2, cursor: next });
      seen.push(...page.waits.map((w) => w.id));
      next = page.nextCursor;
    }
    const legacyIds = legacyMembers.map((m) => `w0.${m.slice(-16)}`);
    expect(seen.sort()).toEqual([...legacyIds.slice(2), fresh.id].sort());
    expect(ids.sort()).toEqual(legacyIds.sort());
  });
});
