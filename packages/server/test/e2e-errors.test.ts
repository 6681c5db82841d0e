/**
 * End to end, every error code of docs/api.md reached over HTTP against the real CLI,
 * each in the one error shape `{"error":{"code","message",...}}`; and, with an
 * `api` process alone (no matcher, no scheduler) on a private redis-server:
 * `pending` events, the `backlog` verdict, delivery that never resolves a wait past
 * its deadline, a late event while the wait still reads `waiting`, and
 * `unavailable` once that redis-server is gone.
 */
import { createHmac } from "node:crypto";
import { type RedisServer, spawnCli, startRedisServer } from "@rendezvous/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  bearer,
  type Client,
  client,
  expectError,
  expectIssues,
  type Json,
  LISTENING,
  producerKey,
  request,
  type Started,
  sign,
  sleep,
  startServer,
  until,
} from "./e2e-helpers.js";

const ADMIN = "adm_e2e_errors";
const MAX = 1024;
const CONFIG = {
  partitions: 4,
  adminToken: ADMIN,
  maxPayloadBytes: MAX,
  backlogThresholdMs: 100,
  tenants: {
    acme: {
      hostKeys: ["hk_acme_err"],
      producers: {
        billing: { secrets: ["whsec_err"], keys: ["pk_billing_err"], eventTypes: ["order.*", "job.done"] },
        slow: { keys: ["pk_slow_err"], eventTypes: ["*"], rateLimitPerSec: 2 },
      },
    },
  },
  eventTypes: {
    "order.paid": {
      payloadSchema: { type: "object", required: ["amount"], properties: { amount: { type: "number" } } },
    },
  },
};

let n = 0;
const uid = (label: string) => `${label}-${Date.now().toString(36)}-${++n}`;

describe("every error code over HTTP (rendezvous start)", () => {
  let server: Started;
  let host: Client;
  let billing: Client;

  beforeAll(async () => {
    server = await startServer({ config: CONFIG });
    host = client(server.url, bearer("hk_acme_err"));
    billing = client(server.url, producerKey("acme/billing", "pk_billing_err"));
  });
  afterAll(async () => {
    if (server) expect((await server.proc.terminate()).code).toBe(0);
  });

  it("unauthorized 401: the same answer whatever part failed (host and producer routes)", async () => {
    const raw = JSON.stringify({ id: uid("u"), type: "job.done", correlationId: "c" });
    const json = { "content-type": "application/json" };
    const t = Math.floor(Date.now() / 1000);
    const producerAttempts: Array<Record<string, string>> = [
      {},
      { "rendezvous-producer": "acme/billing" },
      { authorization: "Bearer pk_billing_err" },
      { "rendezvous-producer": "acme/billing", authorization: "Bearer wrong" },
      { "rendezvous-producer": "acme/nobody", authorization: "Bearer pk_billing_err" },
      { "rendezvous-producer": "other/billing", authorization: "Bearer pk_billing_err" },
      { "rendezvous-producer": "acme/slow", authorization: "Bearer pk_billing_err" },
      { "rendezvous-producer": "acme/billing", authorization: "Bearer hk_acme_err" },
      { "rendezvous-producer": "acme/billing", "rendezvous-signature": sign("wrong", raw) },
      { "rendezvous-producer": "acme/billing", "rendezvous-signature": sign("whsec_err", raw, t - 301) },
      { "rendezvous-producer": "acme/billing", "rendezvous-signature": sign("whsec_err", raw, t + 400) },
      { "rendezvous-producer": "acme/billing", "rendezvous-signature": sign("whsec_err", `${raw} `) },
      { "rendezvous-producer": "acme/billing", "rendezvous-signature": "t=1,v1=zz" },
      {
        "rendezvous-producer": "acme/billing",
        authorization: "Bearer pk_billing_err",
        "rendezvous-signature": sign("wrong", raw),
      },
    ];
    const bodies = new Set<string>();
    for (const headers of producerAttempts) {
      for (const path of ["/v1/events", "/v1/events/batch"]) {
        const body = path === "/v1/events" ? raw : JSON.stringify({ events: [JSON.parse(raw)] });
        const r = await request(server.url, "POST", path, { raw: body, headers: { ...json, ...headers } });
        expectError(r, 401, "unauthorized");
        bodies.add(r.text);
      }
    }
    const hostAttempts: Array<Record<string, string>> = [
      {},
      { authorization: "Bearer nope" },
      { authorization: "Basic aGtfYWNtZV9lcnI6" },
      { authorization: "hk_acme_err" },
      { authorization: "Bearer pk_billing_err" },
    ];
    for (const headers of hostAttempts) {
      for (const [method, path] of [
        ["GET", "/v1/waits"],
        ["POST", "/v1/waits"],
        ["GET", "/v1/waits/w1.abc"],
        ["PATCH", "/v1/waits/w1.abc"],
        ["DELETE", "/v1/waits/w1.abc"],
        ["GET", "/v1/waits/w1.abc/explain"],
        ["POST", "/v1/waits/w1.abc/consume"],
        ["POST", "/v1/deliver"],
        ["GET", "/v1/events/billing/e1"],
      ] as const) {
        const r = await request(server.url, method, path, { headers, json: method === "GET" ? undefined : {} });
        expectError(r, 401, "unauthorized");
        bodies.add(r.text);
      }
    }
    expect(bodies.size).toBe(1); // no hint of which part failed
    expect(JSON.parse([...bodies][0] as string)).toEqual({
      error: { code: "unauthorized", message: expect.any(String) },
    });
    // a refused request stored nothing
    const id = JSON.parse(raw).id;
    expectError(await host.get(`/v1/events/billing/${id}`), 404, "not_found");
  });

  it("rate_limited 429 with Retry-After", async () => {
    const slow = client(server.url, producerKey("acme/slow", "pk_slow_err"));
    const sent: Array<{ id: string; status: number }> = [];
    let limited = 0;
    for (let i = 0; i < 8; i++) {
      const id = uid("rl");
      const a = await slow.post("/v1/events", { id, type: "job.done", correlationId: "c" });
      sent.push({ id, status: a.status });
      if (a.status === 429) {
        limited++;
        expectError(a, 429, "rate_limited");
        expect(a.headers.get("retry-after")).toMatch(/^[1-9]\d*$/);
      } else expect(a.status).toBe(202);
    }
    expect(sent[0]?.status).toBe(202);
    expect(limited).toBeGreaterThan(0);
    // a refused event was not stored
    const refused = sent.find((s) => s.status === 429);
    expectError(await host.get(`/v1/events/slow/${refused?.id}`), 404, "not_found");
  });

  it("forbidden_event_type 403", async () => {
    const r = await billing.post("/v1/events", { id: uid("f"), type: "user.created", correlationId: "c" });
    expectError(r, 403, "forbidden_event_type");
  });

  it("not_found 404: unknown, malformed, all-digit, over-long and undecodable ids; unknown routes", async () => {
    const ids = ["w1.doesnotexist", "12345", "bad id!", "x".repeat(250), "..", "%E0%A4%A", "%zz"];
    for (const id of ids) {
      for (const [method, suffix, body] of [
        ["GET", "", undefined],
        ["PATCH", "", { externalJobId: "j" }],
        ["DELETE", "", undefined],
        ["GET", "/explain", undefined],
        ["POST", "/consume", { worker: "w" }],
      ] as const) {
        const r = await host.call(method, `/v1/waits/${id}${suffix}`, { json: body });
        expect(r.status, `${method} ${id}${suffix}: ${r.text}`).toBe(404);
        expectError(r, 404, "not_found");
      }
    }
    expectError(await host.get(`/v1/events/billing/${uid("none")}`), 404, "not_found");
    expectError(await host.get("/v1/events/billing/%zz"), 404, "not_found");
    expectError(await host.get("/v1/nothing"), 404, "not_found");
    expectError(await request(server.url, "GET", "/nothing/at/all"), 404, "not_found");
    expectError(await request(server.url, "GET", "/%zz"), 404, "not_found");
  });

  it("invalid_request 400 with issues (host bodies and queries; a lone surrogate, a number beyond double range)", async () => {
    expectIssues(await host.post("/v1/waits", { runId: "r" }), "invalid_request");
    expectIssues(
      await host.post("/v1/waits", { runId: "r", position: "p", eventType: "Bad Type", correlationId: "c" }),
      "invalid_request",
    );
    expectIssues(
      await host.post("/v1/waits", {
        runId: "r",
        position: "p",
        eventType: "job.done",
        correlationId: "c",
        timeoutMs: 1000,
        deadline: new Date(Date.now() + 5000).toISOString(),
      }),
      "invalid_request",
    );
    expectIssues(await host.get("/v1/waits?limit=0"), "invalid_request");
    expectIssues(await host.get("/v1/waits?state=sleeping"), "invalid_request");
    expectIssues(await host.get("/v1/waits?cursor=not-a-cursor"), "invalid_request");
    expectIssues(await host.post("/v1/deliver", { eventType: "job.done", all: "yes" }), "invalid_request");
    // a lone surrogate (valid JSON as a \udXXX escape, not valid Unicode) anywhere in a host body
    const lone = "\ud800";
    const spec = { runId: "r", position: "p", eventType: "job.done", correlationId: "c" };
    for (const body of [
      { ...spec, correlationId: `c${lone}` },
      { ...spec, runId: `r${lone}` },
      { ...spec, metadata: { note: [`x${lone}`] } },
      { ...spec, metadata: { [`k${lone}`]: 1 } },
    ]) {
      const error = expectIssues(await host.post("/v1/waits", body), "invalid_request");
      expect(JSON.stringify(error.issues)).toContain("lone surrogate");
    }
    expectIssues(await host.post("/v1/deliver", { eventType: "job.done", payload: { s: lone } }), "invalid_request");
    expectIssues(await host.post("/v1/waits/w1.abc/consume", { worker: lone }), "invalid_request");
    expectIssues(await host.patch("/v1/waits/w1.abc", { externalJobId: lone }), "invalid_request");
    // a number JSON reads as Infinity (stringify would send null: the raw body)
    for (const [path, raw] of [
      ["/v1/deliver", '{"eventType":"job.done","payload":{"n":1e400}}'],
      ["/v1/waits", '{"runId":"r","position":"p","eventType":"job.done","correlationId":"c","metadata":{"n":-1e400}}'],
    ] as const) {
      const headers = { "content-type": "application/json", ...bearer("hk_acme_err") };
      const error = expectIssues(await request(server.url, "POST", path, { raw, headers }), "invalid_request");
      expect(JSON.stringify(error.issues)).toContain("out of range");
    }
    // the admin token names the tenant
    const admin = client(server.url, bearer(ADMIN));
    expectIssues(await admin.get("/v1/waits"), "invalid_request");
    expectIssues(await admin.get(`/v1/events/billing/${uid("x")}`), "invalid_request");
  });

  it("invalid_event 400 with issues: not JSON, envelope, payload schema", async () => {
    const bad = (raw: string) =>
      request(server.url, "POST", "/v1/events", {
        raw,
        headers: { "content-type": "application/json", ...producerKey("acme/billing", "pk_billing_err") },
      });
    expectIssues(await bad("{not json"), "invalid_event");
    expectIssues(await bad(""), "invalid_event");
    expectIssues(await bad('{"__proto__":{"x":1},"id":"a","type":"job.done","correlationId":"c"}'), "invalid_event");
    expectIssues(await billing.post("/v1/events", { id: "x", type: "job.done" }), "invalid_event");
    expectIssues(
      await billing.post("/v1/events", { id: "x", type: "job.done", correlationId: "c", extra: 1 }),
      "invalid_event",
    );
    const schema = expectIssues(
      await billing.post("/v1/events", {
        id: uid("s"),
        type: "order.paid",
        correlationId: "c",
        payload: { amount: "1" },
      }),
      "invalid_event",
    );
    expect(schema.issues[0].path).toEqual(["payload", "amount"]);
    expectIssues(await billing.post("/v1/events/batch", { events: "nope" }), "invalid_event");
  });

  it("payload_too_large 413: single body over maxPayloadBytes, batch body over 500 times that; one big event in a batch", async () => {
    const big = { id: uid("big"), type: "job.done", correlationId: "c", payload: { pad: "x".repeat(MAX) } };
    expectError(await billing.post("/v1/events", big), 413, "payload_too_large");
    expectError(await host.get(`/v1/events/billing/${big.id}`), 404, "not_found");
    const ok = { id: uid("ok"), type: "job.done", correlationId: "c" };
    const r = await billing.post("/v1/events/batch", { events: [big, ok] });
    expect(r.status).toBe(200);
    expect(r.body.results[0]).toMatchObject({ status: "rejected", error: { code: "payload_too_large" } });
    expect(r.body.results[1].status).toBe("accepted");
    const huge = JSON.stringify({ events: [{ ...ok, payload: { pad: "y".repeat(MAX * 500) } }] });
    const h = await request(server.url, "POST", "/v1/events/batch", {
      raw: huge,
      headers: { "content-type": "application/json", ...producerKey("acme/billing", "pk_billing_err") },
    });
    expectError(h, 413, "payload_too_large");
  });

  it("event_id_conflict 409, wait_conflict 409, not_waiting 409, not_resolved 409, ambiguous 409 with candidates", async () => {
    const e = { id: uid("c"), type: "job.done", correlationId: "c", payload: { v: 1 } };
    expect((await billing.post("/v1/events", e)).status).toBe(202);
    expectError(await billing.post("/v1/events", { ...e, payload: { v: 2 } }), 409, "event_id_conflict");

    const type = `amb.${Date.now().toString(36)}${++n}`;
    const spec = { runId: uid("run"), position: "p", eventType: type, correlationId: "k1" };
    const w1 = (await host.post("/v1/waits", spec)).body.wait;
    expectError(await host.post("/v1/waits", { ...spec, correlationId: "k2" }), 409, "wait_conflict");
    expectError(await host.post(`/v1/waits/${w1.id}/consume`, { worker: "w" }), 409, "not_resolved");
    const w2 = (await host.post("/v1/waits", { ...spec, runId: uid("run"), correlationId: "k2" })).body.wait;
    const amb = expectError(await host.post("/v1/deliver", { eventType: type }), 409, "ambiguous");
    expect([...amb.candidates].sort()).toEqual([w1.id, w2.id].sort());
    expect((await host.delete(`/v1/waits/${w1.id}`)).status).toBe(200);
    expectError(await host.delete(`/v1/waits/${w1.id}`), 409, "not_waiting");
  });

  it("a signed request verifies with the documented scheme", async () => {
    const raw = JSON.stringify({ id: uid("sig"), type: "job.done", correlationId: "c" });
    const t = Math.floor(Date.now() / 1000) - 200; // within 300 s
    const v1 = createHmac("sha256", "whsec_err").update(`${t}.${raw}`).digest("hex");
    const r = await request(server.url, "POST", "/v1/events", {
      raw,
      headers: {
        "content-type": "application/json",
        "rendezvous-producer": "acme/billing",
        "rendezvous-signature": `t=${t},v1=${v1}`,
      },
    });
    expect(r.status, r.text).toBe(202);
  });
});

describe("api alone on a private redis-server: pending, backlog, deliver past deadline, late, unavailable", () => {
  let redis: RedisServer;
  let server: Started;
  let host: Client;
  let billing: Client;

  beforeAll(async () => {
    redis = await startRedisServer();
    server = await startServer({ config: CONFIG, role: "api", redis: redis.url });
    host = client(server.url, bearer("hk_acme_err"));
    billing = client(server.url, producerKey("acme/billing", "pk_billing_err"));
  });
  afterAll(async () => {
    if (server) expect((await server.proc.terminate()).code).toBe(0);
    await redis?.stop();
  });

  it("without a matcher: events read pending, explain says backlog past backlogThresholdMs", async () => {
    const corr = uid("bl");
    const wait = (
      await host.post("/v1/waits", { runId: uid("run"), position: "p", eventType: "job.done", correlationId: corr })
    ).body.wait;
    const e = await billing.post("/v1/events", { id: uid("e"), type: "job.done", correlationId: corr });
    expect(e.status).toBe(202);
    expect(e.body.event.status).toBe("pending");
    const read = await host.get(`/v1/events/billing/${e.body.event.id}`);
    expect(read.body.event.status).toBe("pending");
    await sleep(250);
    const explained = await host.get(`/v1/waits/${wait.id}/explain`);
    expect(explained.status).toBe(200);
    expect(explained.body).toMatchObject({ state: "waiting", verdict: "backlog" });
    // backlog takes precedence over a rejected signal
    expectError(
      await billing.post("/v1/events", { id: uid("r"), type: "job.done", correlationId: corr, x: 1 }),
      400,
      "invalid_event",
    );
    expect((await host.get(`/v1/waits/${wait.id}/explain`)).body.verdict).toBe("backlog");
  });

  it("a wait past its deadline is no delivery candidate; an event after the deadline is late though the wait reads waiting", async () => {
    const type = `exp.${Date.now().toString(36)}${++n}`;
    const wait = (
      await host.post("/v1/waits", {
        runId: uid("run"),
        position: "p",
        eventType: type,
        correlationId: "k",
        timeoutMs: 100,
      })
    ).body.wait;
    await sleep(250);
    const d = await host.post("/v1/deliver", { eventType: type, correlationId: "k" });
    expect(d.status).toBe(200);
    expect(d.body).toEqual({ delivered: [], matched: 0 });
    expect((await host.post("/v1/deliver", { eventType: type, all: true })).body).toEqual({
      delivered: [],
      matched: 0,
    });
    expect((await host.get(`/v1/waits/${wait.id}`)).body.wait.state).toBe("waiting"); // no scheduler here

    // a late event: accepted after the deadline; a matcher now processes it
    const anyType = client(server.url, producerKey("acme/slow", "pk_slow_err"));
    const late = await anyType.post("/v1/events", { id: uid("late"), type, correlationId: "k" });
    expect(late.status).toBe(202);
    const matcher = spawnCli(["matcher", "--config", server.configFile, "--redis-url", redis.url, "--port", "0"], {
      RENDEZVOUS_PREFIX: server.prefix,
    });
    try {
      await matcher.waitFor(LISTENING);
      const ev = await until(async () => {
        const r = await host.get(`/v1/events/slow/${late.body.event.id}`);
        return r.body.event?.status === "late" ? r.body.event : undefined;
      });
      expect(ev.lateFor).toEqual([wait.id]);
      const w = (await host.get(`/v1/waits/${wait.id}`)).body.wait;
      expect(w.state).toBe("waiting");
      expect(w.resolution).toBeNull();
      expect(w.lateEvents.map((x: Json) => x.id)).toEqual([late.body.event.id]);
    } finally {
      expect((await matcher.terminate()).code).toBe(0);
    }
  });

  it("unavailable 503: /readyz and the API once redis-server is gone", async () => {
    expect((await request(server.url, "GET", "/readyz")).status).toBe(200);
    await redis.kill();
    // let the process see its connection close first: a command written to the dead socket would be queued for
    // retry, and the drain (quit behind it) would then wait through every reconnection attempt (reported)
    await sleep(300);
    const started = Date.now();
    const ready = await request(server.url, "GET", "/readyz");
    expect(expectError(ready, 503, "unavailable")).toMatchObject({ redis: false, reason: "redis_down" });
    // not connected: answered at once by the API's hook, `redis_down` with Retry-After
    for (const r of [
      await host.get("/v1/waits/w1.anything"),
      await host.get("/v1/waits"),
      await billing.post("/v1/events", { id: uid("u"), type: "job.done", correlationId: "c" }),
    ]) {
      expect(expectError(r, 503, "unavailable").reason).toBe("redis_down");
      expect(r.headers.get("retry-after")).toBe("1");
    }
    expectError(await request(server.url, "GET", "/readyz"), 503, "unavailable");
    expect(Date.now() - started).toBeLessThan(10_000); // answered, not queued behind reconnection attempts
    expect((await request(server.url, "GET", "/healthz")).status).toBe(200);
    const metrics = await request(server.url, "GET", "/metrics");
    expect(metrics.status).toBe(200);
    expect(metrics.text).toContain("rendezvous_");
  });
});
