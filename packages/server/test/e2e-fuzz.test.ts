/**
 * End to end, bad input against the real CLI: a bad config file stops startup
 * (exit 1, stderr naming the bad field); malformed bodies and queries to every
 * host route answer `400 invalid_request` with issues; and a seeded fuzz of
 * thousands of generated requests over all routes (methods, paths, ids, headers,
 * bodies, query strings, valid and forged credentials) never gets a 5xx and leaves
 * the server ready. Replay the fuzz with RENDEZVOUS_SEED=<seed>.
 */
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { redisUrl, seedFromEnv, spawnCli, uniquePrefix } from "@rendezvous/testkit";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  bearer,
  type Client,
  client,
  expectError,
  expectIssues,
  type Json,
  producerKey,
  request,
  type Started,
  sign,
  startServer,
} from "./e2e-helpers.js";

const ADMIN = "adm_e2e_fuzz";
const MAX = 2048;
const CONFIG = {
  partitions: 4,
  adminToken: ADMIN,
  maxPayloadBytes: MAX,
  tenants: {
    acme: {
      hostKeys: ["hk_acme_fuzz"],
      producers: {
        billing: { secrets: ["whsec_fuzz"], keys: ["pk_billing_fuzz"], eventTypes: ["order.*", "job.*"] },
        slow: { keys: ["pk_slow_fuzz"], eventTypes: ["*"], rateLimitPerSec: 5 },
      },
    },
    beta: { hostKeys: ["hk_beta_fuzz"], producers: { svc: { keys: ["pk_svc_fuzz"], eventTypes: ["*"] } } },
  },
  eventTypes: {
    "order.paid": {
      payloadSchema: { type: "object", required: ["amount"], properties: { amount: { type: "number" } } },
    },
  },
};

describe("a bad config file stops startup", () => {
  it("exit 1, stderr names the bad field; also for a file that is not JSON", async () => {
    const dir = mkdtempSync(join(tmpdir(), "rdv-e2e-badcfg-"));
    const cases: Array<{ name: string; content?: string; expect: RegExp }> = [
      {
        name: "event-types.json",
        content: JSON.stringify({
          tenants: { acme: { hostKeys: ["k"], producers: { billing: { keys: ["pk"], eventTypes: ["Not A Type!"] } } } },
        }),
        expect: /tenants\.acme\.producers\.billing\.eventTypes/,
      },
      { name: "partitions.json", content: JSON.stringify({ partitions: 0 }), expect: /partitions/ },
      { name: "not-json.json", content: "{ partitions: 4 ", expect: /not valid JSON/ },
    ];
    const runs = cases.map(async (c) => {
      const file = join(dir, c.name);
      if (c.content !== undefined) writeFileSync(file, c.content);
      const proc = spawnCli(["start", "--config", file, "--redis-url", redisUrl(), "--port", "0"], {
        RENDEZVOUS_PREFIX: uniquePrefix("b"),
      });
      let stderr = "";
      proc.child.stderr?.on("data", (d: Buffer) => {
        stderr += d.toString();
      });
      const exit = await proc.exited;
      return { c, exit, stderr, out: proc.output() };
    });
    for (const { c, exit, stderr, out } of await Promise.all(runs)) {
      expect(exit.code, `${c.name}: ${out}`).toBe(1);
      expect(stderr, c.name).toMatch(c.expect);
      expect(out, c.name).not.toMatch(/listening on/);
    }
  });
});

describe("bad input over HTTP", () => {
  let server: Started;
  let host: Client;
  let admin: Client;
  let waitId: string;

  beforeAll(async () => {
    server = await startServer({ config: CONFIG });
    host = client(server.url, bearer("hk_acme_fuzz"));
    admin = client(server.url, bearer(ADMIN));
    const r = await host.post("/v1/waits", {
      runId: "fuzz-run",
      position: "p",
      eventType: "job.done",
      correlationId: "c",
    });
    expect(r.status).toBe(201);
    waitId = r.body.wait.id;
  });
  afterAll(async () => {
    if (server) expect((await server.proc.terminate()).code).toBe(0);
  });

  it("malformed bodies and queries to every host route: 400 invalid_request with issues", async () => {
    const spec = { runId: "r", position: "p", eventType: "job.done", correlationId: "c" };
    const badWaits: unknown[] = [
      {},
      [],
      null,
      "spec",
      42,
      { ...spec, runId: "" },
      { ...spec, runId: 5 },
      { ...spec, position: "x".repeat(201) },
      { ...spec, eventType: "Job.Done" },
      { ...spec, correlationId: "" },
      { ...spec, correlationId: "c".repeat(257) },
      { ...spec, timeoutMs: -1 },
      { ...spec, timeoutMs: 1.5 },
      { ...spec, timeoutMs: "1000" },
      { ...spec, timeoutMs: 1000, deadline: "2030-01-01T00:00:00.000Z" },
      { ...spec, deadline: "tomorrow" },
      { ...spec, since: 12 },
      { ...spec, metadata: [1, 2] },
      { ...spec, metadata: "m" },
      { ...spec, externalJobId: "" },
      { ...spec, tenant: "beta" },
      { ...spec, unknown: true },
    ];
    for (const body of badWaits) {
      const r = await host.post("/v1/waits", body);
      expect(r.status, `${JSON.stringify(body)} → ${r.text}`).toBe(400);
      expectIssues(r, "invalid_request");
    }
    // raw bodies that are not a JSON object
    for (const [raw, type] of [
      ["{", "application/json"],
      ["", "application/json"],
      ["hello", "text/plain"],
      ["a=b", "application/x-www-form-urlencoded"],
      ["<wait/>", "application/xml"],
    ] as const) {
      for (const [method, path] of [
        ["POST", "/v1/waits"],
        ["PATCH", `/v1/waits/${waitId}`],
        ["POST", `/v1/waits/${waitId}/consume`],
        ["POST", "/v1/deliver"],
      ] as const) {
        const r = await host.call(method, path, { raw, headers: { "content-type": type } });
        expect(r.status, `${method} ${path} ${type} ${raw} → ${r.text}`).toBe(400);
        expectIssues(r, "invalid_request");
      }
    }
    // no body at all where one is required
    for (const [method, path] of [
      ["POST", "/v1/waits"],
      ["PATCH", `/v1/waits/${waitId}`],
      ["POST", `/v1/waits/${waitId}/consume`],
      ["POST", "/v1/deliver"],
    ] as const) {
      expectIssues(await host.call(method, path), "invalid_request");
    }
    // a DELETE with a body that is not JSON
    expectIssues(
      await host.call("DELETE", `/v1/waits/${waitId}`, { raw: "{", headers: { "content-type": "application/json" } }),
      "invalid_request",
    );
    for (const body of [
      {},
      { externalJobId: "" },
      { externalJobId: 7 },
      { externalJobId: "x".repeat(201) },
      { externalJobId: "j", more: 1 },
    ]) {
      expectIssues(await host.patch(`/v1/waits/${waitId}`, body), "invalid_request");
    }
    for (const body of [{}, { worker: "" }, { worker: 1 }, { worker: "w", extra: true }]) {
      expectIssues(await host.post(`/v1/waits/${waitId}/consume`, body), "invalid_request");
    }
    for (const body of [
      {},
      { eventType: "" },
      { eventType: "Bad!" },
      { eventType: "job.done", correlationId: "" },
      { eventType: "job.done", payload: [] },
      { eventType: "job.done", payload: "p" },
      { eventType: "job.done", all: 1 },
      { eventType: "job.done", tenant: "beta" },
    ]) {
      expectIssues(await host.post("/v1/deliver", body), "invalid_request");
    }
    for (const query of [
      "limit=0",
      "limit=501",
      "limit=abc",
      "limit=1.5",
      "state=done",
      "runId=",
      "eventType=",
      "correlationId=",
      `correlationId=${"c".repeat(257)}`,
      "cursor=%%%",
      "cursor=bm90IGpzb24",
      "bogus=1",
      "tenant=acme&tenant=beta",
    ]) {
      const r = await host.get(`/v1/waits?${query}`);
      expect(r.status, `?${query} → ${r.text}`).toBe(400);
      expectIssues(r, "invalid_request");
    }
    // the tenant of a read: admin must name one, and only one
    expectIssues(await admin.get("/v1/waits"), "invalid_request");
    expectIssues(await admin.post("/v1/waits", spec), "invalid_request");
    expectIssues(await admin.post("/v1/deliver", { eventType: "job.done" }), "invalid_request");
    expectIssues(await admin.get("/v1/events/billing/e1"), "invalid_request");
    expectIssues(await admin.get("/v1/events/billing/e1?tenant=acme&tenant=beta"), "invalid_request");
    expectIssues(await host.get("/v1/events/billing/e1?tenant=acme&tenant=acme"), "invalid_request");
    // and the wait is untouched by all of it
    const w = await host.get(`/v1/waits/${waitId}`);
    expect(w.body.wait).toMatchObject({ state: "waiting", externalJobId: null, consumption: null });
  });

  it("seeded fuzz: ≥ 2,000 generated requests over all routes, never a 5xx, ready after", async () => {
    const seed = seedFromEnv("e2e fuzz");
    const other = (await client(server.url, bearer("hk_beta_fuzz")).post("/v1/waits", {
      runId: "fuzz-run",
      position: "p",
      eventType: "job.done",
      correlationId: "c",
    })) as Json;
    const ids = [waitId, other.body.wait.id as string];
    for (let i = 0; i < 4; i++) {
      const spec = {
        runId: `pre-${seed}-${i}`,
        position: "p",
        eventType: "job.fuzz",
        correlationId: i % 2 ? "c" : "k",
      };
      ids.push((await host.post("/v1/waits", spec)).body.wait.id as string);
    }

    const safe = (max: number) => fc.string({ unit: "grapheme-ascii", maxLength: max });
    const headerValue = (max: number) =>
      fc.string({ unit: fc.integer({ min: 0x20, max: 0x7e }).map((c) => String.fromCharCode(c)), maxLength: max });
    const idLike = fc.oneof(
      fc.constantFrom(...ids, "w0.x", "w1.AAAAAAAAAAAAAAAA", "123", "..", ".", "-", "%zz", "%E0%A4%A", "%00", "%2F"),
      fc.string({ minLength: 1, maxLength: 40 }).map(encodeURIComponent),
      fc.integer({ min: 150, max: 400 }).map((n) => "w".repeat(n)),
      safe(20).map((s) => s.replace(/[/?#]/g, "_")),
    );
    const anyJson = fc.jsonValue({ maxDepth: 3 });
    const specLike = fc.record(
      {
        runId: fc.oneof(safe(20), fc.integer(), fc.constant("fuzz-run")),
        position: fc.oneof(safe(10), fc.constant("p")),
        eventType: fc.oneof(fc.constantFrom("job.done", "order.paid", "job.fuzz", "Bad"), safe(10)),
        correlationId: fc.oneof(fc.constantFrom("c", "k"), safe(30)),
        timeoutMs: fc.oneof(fc.integer({ min: -10, max: 10_000_000 }), fc.double(), fc.constant(1e20)),
        deadline: fc.oneof(
          fc.date({ noInvalidDate: true }).map((d) => d.toISOString()),
          safe(20),
          fc.constant("2030-01-01T00:00:00+02:00"),
        ),
        since: fc.oneof(
          fc.date({ noInvalidDate: true }).map((d) => d.toISOString()),
          safe(10),
        ),
        metadata: anyJson,
        externalJobId: fc.oneof(safe(10), fc.integer()),
        worker: fc.oneof(safe(10), fc.constant("")),
        all: fc.oneof(fc.boolean(), anyJson),
        payload: anyJson,
        events: fc.array(anyJson, { maxLength: 3 }),
        id: fc.oneof(safe(20), fc.constant("e1")),
        type: fc.oneof(fc.constantFrom("job.done", "order.paid", "other.thing"), safe(10)),
      },
      { requiredKeys: [] },
    );
    const eventLike = fc.record({
      id: fc.oneof(safe(12), fc.constantFrom("e1", "e2")),
      type: fc.constantFrom("job.done", "job.fuzz", "order.paid", "order.x", "forbidden.type", "BAD"),
      correlationId: fc.oneof(fc.constantFrom("c", "k"), safe(30)),
      payload: fc.oneof(fc.dictionary(safe(6), anyJson, { maxKeys: 3 }), anyJson),
    });
    /** bodies a route accepts: waits register, events are accepted, waits resolve, are consumed… */
    const validBody = fc.oneof(
      fc
        .record({
          runId: fc.constantFrom("fuzz-run", "r1", "r2", "r3"),
          position: fc.constantFrom("p", "q", "s"),
          eventType: fc.constantFrom("job.done", "job.fuzz"),
          correlationId: fc.constantFrom("c", "k"),
          timeoutMs: fc.constantFrom(undefined, 200, 60_000),
        })
        .map((v) => JSON.stringify(v)),
      fc
        .record({
          id: fc.string({ minLength: 1, maxLength: 8 }),
          type: fc.constantFrom("job.done", "job.fuzz", "order.paid"),
          correlationId: fc.constantFrom("c", "k"),
          payload: fc.constantFrom({}, { amount: 1 }),
        })
        .chain((e) => fc.constantFrom(JSON.stringify(e), JSON.stringify({ events: [e, { ...e, id: `${e.id}b` }] }))),
      fc.constantFrom(
        JSON.stringify({ worker: "fuzz-worker" }),
        JSON.stringify({ externalJobId: "ext-fuzz" }),
        JSON.stringify({ eventType: "job.fuzz", correlationId: "k" }),
        JSON.stringify({ eventType: "job.fuzz", all: true, payload: { via: "fuzz" } }),
      ),
    );
    const body = fc.oneof(
      { weight: 2, arbitrary: fc.constant(undefined) },
      { weight: 6, arbitrary: validBody },
      { weight: 4, arbitrary: specLike.map((v) => JSON.stringify(v)) },
      { weight: 4, arbitrary: eventLike.map((v) => JSON.stringify(v)) },
      { weight: 2, arbitrary: fc.array(eventLike, { maxLength: 5 }).map((events) => JSON.stringify({ events })) },
      { weight: 2, arbitrary: anyJson.map((v) => JSON.stringify(v)) },
      { weight: 1, arbitrary: fc.string({ maxLength: 100 }) },
      { weight: 1, arbitrary: fc.uint8Array({ maxLength: 100 }) },
      {
        weight: 1,
        arbitrary: fc.constant(
          JSON.stringify({ id: "big", type: "job.done", correlationId: "c", payload: { x: "y".repeat(MAX) } }),
        ),
      },
      { weight: 1, arbitrary: fc.integer({ min: 1, max: 4 }).map((n) => `{"a":${"[".repeat(n * 500)}`) },
      { weight: 1, arbitrary: fc.constant('{"__proto__":{"polluted":true},"runId":"r"}') },
    );
    const query = fc.oneof(
      { weight: 4, arbitrary: fc.constant("") },
      fc
        .array(
          fc.tuple(
            fc.constantFrom("runId", "state", "eventType", "correlationId", "limit", "cursor", "tenant", "x", "all"),
            fc.oneof(
              safe(12),
              fc.constantFrom(
                "acme",
                "beta",
                "waiting",
                "resolved",
                "0",
                "-1",
                "500",
                "501",
                "job.done",
                "%zz",
                "fuzz-run",
              ),
            ),
          ),
          { maxLength: 4 },
        )
        .map((kv) => `?${kv.map(([k, v]) => `${k}=${v}`).join("&")}`),
    );
    const anyPath = fc.oneof(
      fc
        .tuple(fc.constantFrom("billing", "svc", "slow", "nobody", "%zz", ".."), idLike)
        .map(([p, id]) => `/v1/events/${p}/${id}`),
      fc.constantFrom("/v1/events", "/v1/events/batch", "/v1/waits", "/v1/deliver"),
      idLike.map((id) => `/v1/waits/${id}`),
      idLike.map((id) => `/v1/waits/${id}/explain`),
      idLike.map((id) => `/v1/waits/${id}/consume`),
      fc.constantFrom(
        "/healthz",
        "/readyz",
        "/metrics",
        "/openapi.json",
        "/admin/queues",
        "/admin/queues/api/queues",
        "/",
      ),
      safe(30).map((s) => `/${s.replace(/[?#]/g, "")}`),
      fc.constantFrom("/v1", "/v1/", "/v1/waits/", "/v1/events/billing", "/v1//waits", "/v1/waits/../events"),
    );
    const anyMethod = fc.constantFrom("GET", "POST", "PATCH", "DELETE", "PUT", "HEAD", "OPTIONS");
    const known = fc.oneof(fc.constantFrom(...ids), idLike);
    /** the routes of docs/api.md with their methods (most requests), then anything at all */
    const target = fc.oneof(
      { weight: 3, arbitrary: fc.constantFrom(["POST", "/v1/events"], ["POST", "/v1/events/batch"]) },
      {
        weight: 1,
        arbitrary: fc
          .tuple(fc.constantFrom("billing", "svc", "slow", "nobody"), fc.oneof(fc.constantFrom("e1", "e2"), idLike))
          .map(([p, id]) => ["GET", `/v1/events/${p}/${id}`]),
      },
      { weight: 3, arbitrary: fc.constantFrom(["POST", "/v1/waits"], ["GET", "/v1/waits"], ["POST", "/v1/deliver"]) },
      {
        weight: 4,
        arbitrary: fc
          .tuple(
            fc.constantFrom(["GET", ""], ["PATCH", ""], ["DELETE", ""], ["GET", "/explain"], ["POST", "/consume"]),
            known,
          )
          .map(([[m, suffix], id]) => [m, `/v1/waits/${id}${suffix}`]),
      },
      {
        weight: 1,
        arbitrary: fc.constantFrom(
          ["GET", "/healthz"],
          ["GET", "/readyz"],
          ["GET", "/metrics"],
          ["GET", "/openapi.json"],
          ["GET", "/admin/queues"],
        ),
      },
      { weight: 2, arbitrary: fc.tuple(anyMethod, anyPath) },
    );
    type Cred = (raw: string | Uint8Array | undefined) => Record<string, string>;
    const valid: fc.Arbitrary<Cred> = fc.constantFrom<Cred>(
      () => bearer("hk_acme_fuzz"),
      () => bearer("hk_beta_fuzz"),
      () => bearer(ADMIN),
      () => producerKey("acme/billing", "pk_billing_fuzz"),
      () => producerKey("acme/slow", "pk_slow_fuzz"),
      () => producerKey("beta/svc", "pk_svc_fuzz"),
    );
    const credential: fc.Arbitrary<Cred> = fc.oneof(
      { weight: 8, arbitrary: valid },
      fc.constant<Cred>(() => ({})),
      fc.constant<Cred>((raw) => ({
        "rendezvous-producer": "acme/billing",
        "rendezvous-signature": sign("whsec_fuzz", typeof raw === "string" ? raw : ""),
      })),
      headerValue(40).map<Cred>((k) => () => ({ authorization: `Bearer ${k}` })),
      headerValue(40).map<Cred>((k) => () => ({ authorization: k })),
      fc.tuple(headerValue(20), headerValue(60)).map<Cred>(([p, s]) => () => ({
        "rendezvous-producer": p,
        "rendezvous-signature": s,
      })),
      fc.integer({ min: 301, max: 100_000 }).map<Cred>((skew) => (raw) => ({
        "rendezvous-producer": "acme/billing",
        "rendezvous-signature": sign(
          "whsec_fuzz",
          typeof raw === "string" ? raw : "",
          Math.floor(Date.now() / 1000) - skew,
        ),
      })),
      fc.constant<Cred>(() => ({ authorization: `Basic ${Buffer.from(`admin:${ADMIN}`).toString("base64")}` })),
    );
    const contentType = fc.constantFrom(
      "application/json",
      "application/json",
      "application/json; charset=utf-8",
      "text/plain",
      "application/x-www-form-urlencoded",
      "multipart/form-data; boundary=x",
      "",
    );
    const producerCreds: Cred[] = [
      () => producerKey("acme/billing", "pk_billing_fuzz"),
      () => producerKey("acme/slow", "pk_slow_fuzz"),
      () => producerKey("beta/svc", "pk_svc_fuzz"),
      (raw) => ({
        "rendezvous-producer": "acme/billing",
        "rendezvous-signature": sign("whsec_fuzz", typeof raw === "string" ? raw : ""),
      }),
    ];
    const hostCreds: Cred[] = [() => bearer("hk_acme_fuzz"), () => bearer("hk_beta_fuzz"), () => bearer(ADMIN)];
    /** mostly a credential that fits the route (producer or host), else any */
    const auth = fc.oneof(
      { weight: 6, arbitrary: fc.nat(11).map((fit) => ({ fit, cred: undefined })) },
      { weight: 4, arbitrary: credential.map((cred) => ({ fit: undefined, cred })) },
    );
    const req = fc.record({ target, query, body, auth, contentType }).map((r) => {
      const [method, path] = r.target as [string, string];
      const forProducer = method === "POST" && path.startsWith("/v1/events");
      const fitting = forProducer ? producerCreds : hostCreds;
      const cred = r.auth.cred ?? (fitting[(r.auth.fit ?? 0) % fitting.length] as Cred);
      return { ...r, method, path, credential: cred };
    });

    const samples = fc.sample(req, { seed, numRuns: 2200 });
    const failures: string[] = [];
    const statuses = new Map<number, number>();
    let sent = 0;
    let next = 0;
    const worker = async () => {
      while (next < samples.length) {
        const s = samples[next++] as (typeof samples)[number];
        const noBody = s.method === "GET" || s.method === "HEAD";
        const raw = noBody ? undefined : s.body;
        const headers: Record<string, string> = { ...s.credential(raw) };
        if (raw !== undefined && s.contentType) headers["content-type"] = s.contentType;
        let res: Response;
        try {
          res = await fetch(`${server.url}${s.path}${s.query}`, { method: s.method, headers, body: raw });
        } catch (err) {
          // a request fetch itself refuses to send (an invalid URL or header) does not count
          if (!(err instanceof TypeError) || err.message === "fetch failed") {
            failures.push(
              `${s.method} ${s.path}${s.query}: ${String(err)} ${String((err as { cause?: unknown }).cause)}`,
            );
          }
          continue;
        }
        sent++;
        const text = await res.text();
        statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
        if (res.status >= 500) failures.push(`${s.method} ${s.path}${s.query} → ${res.status} ${text.slice(0, 300)}`);
        else if (res.status >= 400 && s.method !== "HEAD" && !s.path.startsWith("/admin/queues/api")) {
          // every error answer is in the API shape
          let parsed: Json;
          try {
            parsed = JSON.parse(text);
          } catch {
            parsed = null;
          }
          if (typeof parsed?.error?.code !== "string" || typeof parsed?.error?.message !== "string") {
            failures.push(`${s.method} ${s.path}${s.query} → ${res.status} not an API error: ${text.slice(0, 200)}`);
          }
        }
      }
    };
    await Promise.all(Array.from({ length: 8 }, worker));
    expect(failures, `seed ${seed}`).toEqual([]);
    expect(sent).toBeGreaterThanOrEqual(2000);
    expect([...statuses.keys()].some((s) => s >= 200 && s < 300)).toBe(true);
    expect([...statuses.keys()].some((s) => s >= 400 && s < 500)).toBe(true);

    expect((await request(server.url, "GET", "/readyz")).status).toBe(200);
    expect((await request(server.url, "GET", "/healthz")).status).toBe(200);
    // still serving: the fixed wait reads back, a new wait registers
    const read = await host.get(`/v1/waits/${waitId}`);
    expect(read.status).toBe(200);
    expect(read.body.wait.id).toBe(waitId);
    const fresh = await host.post("/v1/waits", {
      runId: `after-${seed}`,
      position: "p",
      eventType: "job.done",
      correlationId: "z",
    });
    expect(fresh.status).toBe(201);
    expectError(await host.get("/v1/waits/w1.nope"), 404, "not_found");
  });
});
