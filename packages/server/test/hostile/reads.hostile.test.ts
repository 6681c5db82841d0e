/**
 * Expensive reads against a real `rendezvous api` process (issue #15, point 4): list
 * requests that no index answers, walked to the end by four clients at once over a
 * tenant of 100k waits, and four `limit=500` listings of waits with 1 MiB of metadata.
 * Each page must answer within 2 s, the cursors must reach exactly the matching waits,
 * and the legitimate tenant's traffic must stay available (RSS growth ≤ 200 MiB, every
 * request 2xx within 2 s).
 */
import { createResources, parseConfig, type Resources } from "@rendezvous/engine";
import { redisUrl } from "@rendezvous/testkit";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Started, startServer } from "../e2e-helpers.js";
import { expectAvailable, type LegitTraffic, MAX_LEGIT_MS, underAttack } from "./harness.js";
import {
  concurrentListings,
  seedLargeMetadata,
  seedUnindexed,
  type UnindexedSeed,
  type Walk,
} from "./reads.attacks.js";

const MiB = 1024 * 1024;
const TOTAL = 100_000;
/** the server's default page bound (docs/api.md, Bounded reads) */
const PAGE_BYTES = 2 * MiB;

const CONFIG = {
  partitions: 16,
  // this file's 1 MiB-metadata waits (the default is 64 KiB)
  maxMetadataBytes: MiB,
  tenants: {
    acme: { hostKeys: ["hk_acme_reads"] },
    big: { hostKeys: ["hk_big_reads"] },
    legit: {
      hostKeys: ["hk_legit_reads"],
      producers: { svc: { keys: ["pk_legit_reads"], eventTypes: ["legit.*"] } },
    },
  },
};

let server: Started;
let res: Resources;
let seed: UnindexedSeed;
let legit: LegitTraffic;

beforeAll(async () => {
  server = await startServer({ role: "api", config: CONFIG });
  // the same Redis and prefix as the server; a deliver large enough to settle 30% at once
  res = createResources({
    redisUrl: redisUrl(),
    prefix: server.prefix,
    config: parseConfig({ ...CONFIG, fanoutCap: 10_000 }),
    logger: pino({ level: "silent" }),
  });
  seed = await seedUnindexed(res.store, "acme", { total: TOTAL });
  console.log(
    `seeded ${TOTAL} waits (${seed.needles.length} needles, ${seed.cancelled.length} cancelled) in ${Math.round(seed.ms)} ms`,
  );
  legit = {
    base: server.url,
    hostKey: "hk_legit_reads",
    producer: "legit/svc",
    producerKey: "pk_legit_reads",
    eventType: "legit.ping",
  };
}, 60_000);

afterAll(async () => {
  await res?.close();
  await server?.proc.terminate();
});

function summary(w: Walk) {
  const ms = w.pages.map((p) => p.ms).sort((a, b) => a - b);
  return {
    path: w.path,
    pages: w.pages.length,
    empty: w.pages.filter((p) => p.waits === 0).length,
    maxMs: Math.round(ms.at(-1) ?? 0),
    totalMs: Math.round(ms.reduce((a, b) => a + b, 0)),
    maxBytes: Math.max(...w.pages.map((p) => p.bytes)),
  };
}

describe("expensive reads", () => {
  it("four concurrent unindexed listings of 100k waits: every page within 2 s, the cursors reach exactly every match", async () => {
    // a correlation id that no wait has is the worst case: every wait of the tenant is examined
    const paths = [
      "/v1/waits?correlationId=nosuch&limit=1",
      "/v1/waits?correlationId=needle&limit=1",
      "/v1/waits?state=cancelled&limit=1",
      "/v1/waits?state=cancelled&limit=500",
    ];
    const expected = (path: string) =>
      path.includes("nosuch") ? [] : path.includes("needle") ? seed.needles : seed.cancelled;
    let walks: Walk[] = [];
    const report = await underAttack(server.proc.pid, legit, async () => {
      walks = await concurrentListings(server.url, "hk_acme_reads", paths);
    });
    for (const w of walks) console.log(JSON.stringify(summary(w)));
    console.log(`legitimate p99 ${Math.round(report.p99)} ms over ${report.legit.length} requests`);
    for (const w of walks) {
      expect(w.error, w.path).toBeNull();
      expect(
        w.pages.filter((p) => p.ms > MAX_LEGIT_MS).map((p) => Math.round(p.ms)),
        w.path,
      ).toEqual([]);
      expect(w.ids.length, `${w.path}: no wait twice`).toBe(new Set(w.ids).size);
      expect([...w.ids].sort(), w.path).toEqual([...expected(w.path)].sort());
    }
    // the scan bound at work: the unmatched walk is a hundred empty pages with a cursor, not one long request
    expect(walks[0]?.pages.length).toBeGreaterThanOrEqual(TOTAL / 1000);
    expectAvailable(report);
  });

  it("four concurrent limit=500 listings of 1 MiB-metadata waits: pages bounded in bytes, memory bounded", async () => {
    const big = await seedLargeMetadata(res.store, "big", { count: 100, metadataBytes: MiB });
    console.log(`seeded 100 waits of 1 MiB metadata in ${Math.round(big.ms)} ms`);
    const paths = Array.from({ length: 4 }, () => "/v1/waits?limit=500");
    let walks: Walk[] = [];
    const report = await underAttack(server.proc.pid, legit, async () => {
      walks = await concurrentListings(server.url, "hk_big_reads", paths);
    });
    for (const w of walks) console.log(JSON.stringify(summary(w)));
    console.log(
      `RSS ${Math.round(report.baselineRss / MiB)} → peak ${Math.round(report.peakRss / MiB)} MiB; legitimate p99 ${Math.round(report.p99)} ms`,
    );
    for (const w of walks) {
      expect(w.error, w.path).toBeNull();
      expect([...w.ids].sort()).toEqual([...big.ids].sort());
      for (const p of w.pages) {
        // the waits of a page stay within the bound (one 1 MiB wait more than fits never joins it)
        expect(p.bytes).toBeLessThanOrEqual(PAGE_BYTES + 4096);
        expect(p.waits).toBeGreaterThanOrEqual(1);
        expect(p.waits).toBeLessThanOrEqual(2);
        expect(p.ms).toBeLessThanOrEqual(MAX_LEGIT_MS);
      }
    }
    expectAvailable(report);
  });
});
