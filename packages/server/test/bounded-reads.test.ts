/**
 * Bounded reads over real HTTP (the app listening on loopback, the run's private Redis):
 * `GET /v1/waits` and `/console/api/waits` with small `maxListScan` and
 * `maxListPageBytes`, so that early pages, empty pages with a cursor and the byte bound
 * show with a few dozen waits; and `maxMetadataBytes` on registration (413, nothing stored).
 */
import { createResources, ListGate, parseConfig, type Resources } from "@rendezvous/engine";
import { buildApp } from "@rendezvous/http";
import { redisUrl, uniquePrefix } from "@rendezvous/testkit";
import type { FastifyInstance } from "fastify";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ensureConsoleBuilt } from "./console-browser.js";
import { bearer, type Client, client, expectError, expectIssues, type Json } from "./e2e-helpers.js";

const SCAN = 10;
const PAGE_BYTES = 8192;
const META = 4096;

let app: FastifyInstance;
let res: Resources;
let host: Client;
let admin: Client;

beforeAll(async () => {
  ensureConsoleBuilt();
  // the resources live for the whole file (makeResources closes them after each test)
  res = createResources({
    redisUrl: redisUrl(),
    prefix: uniquePrefix("br"),
    config: parseConfig({
      partitions: 4,
      adminToken: "adm_bounded",
      maxListScan: SCAN,
      maxListPageBytes: PAGE_BYTES,
      maxMetadataBytes: META,
      tenants: { acme: { hostKeys: ["hk_acme_bounded"] }, globex: { hostKeys: ["hk_globex_bounded"] } },
    }),
    logger: pino({ level: "silent" }),
  });
  app = await buildApp({ res, roles: ["api"], running: () => true, api: true, queueNames: [] });
  await res.redis.ping(); // connected: the API answers 503 while Redis is not ready
  const url = await app.listen({ host: "127.0.0.1", port: 0 });
  host = client(url, bearer("hk_acme_bounded"));
  admin = client(url, bearer("adm_bounded"));
});

afterAll(async () => {
  await app?.close();
  await res?.close();
});

interface Walk {
  pages: Array<{ waits: Json[]; nextCursor: string | null; bytes: number }>;
  ids: string[];
}

/** Follows the cursors of a listing to its end (at most 200 pages). */
async function walk(c: Client, path: string): Promise<Walk> {
  const pages: Walk["pages"] = [];
  let cursor: string | null = null;
  do {
    const sep = path.includes("?") ? "&" : "?";
    const r = await c.get(`${path}${cursor ? `${sep}cursor=${encodeURIComponent(cursor)}` : ""}`);
    expect(r.status, r.text.slice(0, 300)).toBe(200);
    pages.push({ waits: r.body.waits, nextCursor: r.body.nextCursor, bytes: Buffer.byteLength(r.text) });
    cursor = r.body.nextCursor;
  } while (cursor && pages.length < 200);
  expect(cursor, "the listing ended").toBeNull();
  return { pages, ids: pages.flatMap((p) => p.waits.map((w) => w.id as string)) };
}

describe("GET /v1/waits, bounded", () => {
  const needles: string[] = [];
  const cancelled: string[] = [];

  beforeAll(async () => {
    for (let i = 0; i < 60; i++) {
      const needle = i % 20 === 7;
      const r = await host.post("/v1/waits", {
        runId: "bounded-run",
        position: `p${i}`,
        eventType: needle ? `needle.t${i}` : "job.done",
        correlationId: needle ? "needle" : `c${i}`,
      });
      expect(r.status).toBe(201);
      if (needle) needles.push(r.body.wait.id);
      else if (i % 15 === 0) cancelled.push((await host.delete(`/v1/waits/${r.body.wait.id}`)).body.wait.id);
    }
    // the other job.done waits resolved: the settled index holds many more than the cancelled
    const delivered = await host.post("/v1/deliver", { eventType: "job.done", all: true });
    expect(delivered.body.delivered).toHaveLength(60 - needles.length - cancelled.length);
  });

  it("correlationId without eventType: pages of at most maxListScan entries, empty ones with a cursor, every match once", async () => {
    const { pages, ids } = await walk(host, "/v1/waits?correlationId=needle&limit=1");
    expect(ids.sort()).toEqual([...needles].sort());
    expect(pages.length).toBeGreaterThanOrEqual(60 / SCAN);
    expect(pages.some((p) => p.waits.length === 0 && p.nextCursor !== null)).toBe(true);
    const state = await walk(host, "/v1/waits?state=cancelled");
    expect(state.ids.sort()).toEqual([...cancelled].sort());
    expect(state.pages.some((p) => p.waits.length === 0 && p.nextCursor !== null)).toBe(true);
  });

  it("an indexed filter answers at once, and a malformed cursor is 400 invalid_request", async () => {
    const r = await host.get("/v1/waits?eventType=needle.t7&correlationId=needle");
    expect(r.body.waits.map((w: Json) => w.id)).toEqual([needles[0]]);
    expect(r.body.nextCursor).toBeNull();
    expectIssues(await host.get("/v1/waits?cursor=not-a-cursor"), "invalid_request");
  });

  it("pages are bounded in bytes: large metadata gets a smaller page, at least one wait each", async () => {
    const made: string[] = [];
    for (let i = 0; i < 9; i++) {
      const r = await host.post("/v1/waits", {
        runId: "fat-run",
        position: `p${i}`,
        eventType: "job.done",
        correlationId: `fat${i}`,
        metadata: { x: "m".repeat(3000) },
      });
      expect(r.status).toBe(201);
      made.push(r.body.wait.id);
    }
    const { pages, ids } = await walk(host, "/v1/waits?runId=fat-run&limit=500");
    expect(ids.sort()).toEqual([...made].sort());
    for (const p of pages) {
      expect(p.waits.length).toBeLessThanOrEqual(2); // 2 × ~3.3 KB fit in 8 KiB, 3 do not
      expect(p.bytes).toBeLessThanOrEqual(PAGE_BYTES + 512); // the envelope and the cursor beside the waits
    }
    // every answered request gave its records back to the process-wide gate
    expect(res.listGate.held).toBe(0);
  });

  it("metadata over maxMetadataBytes is 413 payload_too_large, nothing stored", async () => {
    const spec = { runId: "meta-run", position: "p", eventType: "job.done", correlationId: "meta" };
    const error = expectError(
      await host.post("/v1/waits", { ...spec, metadata: { x: "z".repeat(META) } }),
      413,
      "payload_too_large",
    );
    expect(error.maxMetadataBytes).toBe(META);
    expect((await host.get("/v1/waits?runId=meta-run")).body.waits).toEqual([]);
    // nothing claimed the run position: another definition of it is a new wait
    expect((await host.post("/v1/waits", { ...spec, correlationId: "other", metadata: { x: "z" } })).status).toBe(201);
  });
});

describe("/console/api/waits, bounded", () => {
  it("shares one request's budget across tenants: early and empty pages, every wait once", async () => {
    const made: string[] = [];
    for (const tenant of ["acme", "globex"]) {
      for (let i = 0; i < 12; i++) {
        const r = await admin.post(`/v1/waits?tenant=${tenant}`, {
          runId: "console-run",
          position: `p${i}`,
          eventType: "console.kind",
          correlationId: `k${i}`,
        });
        expect(r.status).toBe(201);
        made.push(r.body.wait.id);
      }
    }
    const { pages, ids } = await walk(admin, "/console/api/waits?eventType=console.kind&limit=200");
    expect(ids.sort()).toEqual([...made].sort());
    for (const p of pages) expect(p.waits.length).toBeLessThanOrEqual(SCAN);
    // a correlation id no wait has, without its type: every wait of both tenants is examined, SCAN a request
    const none = await walk(admin, "/console/api/waits?correlationId=nope");
    expect(none.ids).toEqual([]);
    expect(none.pages.length).toBeGreaterThanOrEqual(24 / SCAN);
    expect(none.pages.slice(0, -1).every((p) => p.waits.length === 0 && p.nextCursor !== null)).toBe(true);
  });
});

describe("the process-wide gate on list records", () => {
  it("a list request waits for room while others hold it, then answers; past the wait it is 503 list_busy with Retry-After", async () => {
    // the same resources, with a gate that waits at most 300 ms
    const gate = new ListGate(PAGE_BYTES, 300);
    const gated = await buildApp({
      res: { ...res, listGate: gate },
      roles: ["api"],
      running: () => true,
      api: true,
      queueNames: [],
    });
    try {
      const url = await gated.listen({ host: "127.0.0.1", port: 0 });
      const c = client(url, bearer("hk_acme_bounded"));
      expect(
        (await c.post("/v1/waits", { runId: "gate-run", position: "p", eventType: "job.done", correlationId: "g" }))
          .status,
      ).toBe(201);
      const other = gate.lease();
      await other.admit([PAGE_BYTES]); // another request holds all the room
      const busy = await c.get("/v1/waits?runId=gate-run");
      const error = expectError(busy, 503, "unavailable");
      expect(error.reason).toBe("list_busy");
      expect(busy.headers.get("retry-after")).toBe("1");
      expectError(await c.get("/console/api/waits?runId=gate-run"), 503, "unavailable");
      // room comes back while the request waits: it answers
      const waiting = c.get("/v1/waits?runId=gate-run");
      setTimeout(() => other.release(), 100);
      const answered = await waiting;
      expect(answered.status).toBe(200);
      expect(answered.body.waits.length).toBeGreaterThan(0);
      expect(gate.held).toBe(0);
    } finally {
      await gated.close();
    }
  });
});
