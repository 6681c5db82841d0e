/**
 * The token routes and the host routes of tokens and heartbeats over real HTTP (the app
 * listening on loopback, the run's private Redis): docs/api.md, "Completion tokens,
 * failure and heartbeats".
 */
import { createResources, parseConfig, type Resources } from "@rendezvous/engine";
import { buildApp, redactTokenUrl } from "@rendezvous/http";
import { redisUrl, uniquePrefix } from "@rendezvous/testkit";
import type { FastifyInstance } from "fastify";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ensureConsoleBuilt } from "./console-browser.js";
import { bearer, type Client, client, expectError, expectIssues, expectWait, type Json } from "./e2e-helpers.js";

const PER_WAIT = 5;
const PER_ADDRESS = 40;

let app: FastifyInstance;
let res: Resources;
let host: Client;
let other: Client;
let anyone: Client;
let runs = 0;

beforeAll(async () => {
  ensureConsoleBuilt();
  res = createResources({
    redisUrl: redisUrl(),
    prefix: uniquePrefix("tok"),
    config: parseConfig({
      partitions: 4,
      adminToken: "adm_tokens",
      publicUrl: "https://rdv.example/",
      tokenRateLimitPerWaitPerSec: PER_WAIT,
      tokenRateLimitPerAddressPerSec: PER_ADDRESS,
      tenants: { acme: { hostKeys: ["hk_acme_tok"] }, globex: { hostKeys: ["hk_globex_tok"] } },
    }),
    logger: pino({ level: "silent" }),
  });
  app = await buildApp({ res, roles: ["api"], running: () => true, api: true, queueNames: [] });
  await res.redis.ping();
  const url = await app.listen({ host: "127.0.0.1", port: 0 });
  host = client(url, bearer("hk_acme_tok"));
  other = client(url, bearer("hk_globex_tok"));
  anyone = client(url);
});

afterAll(async () => {
  await app?.close();
  await res?.close();
});

/** A new wait with a token; `extra` adds to the registration. */
async function withToken(extra: Record<string, unknown> = {}): Promise<{ wait: Json; token: string; url: string }> {
  runs++;
  const r = await host.post("/v1/waits", {
    runId: `run-${runs}`,
    position: "approve",
    eventType: "human.approval",
    correlationId: `c-${runs}`,
    timeoutMs: 60_000,
    token: true,
    ...extra,
  });
  expect(r.status, r.text).toBe(201);
  return { wait: r.body.wait, token: r.body.token.value, url: r.body.token.url };
}

/** Waits for the next one-second window of the rate limits. */
async function nextWindow(): Promise<void> {
  await new Promise((r) => setTimeout(r, 1000 - (Date.now() % 1000) + 5));
}

describe("registration with a token", () => {
  it("201 carries the token once, with its URL; 200 does not", async () => {
    const { wait, token, url } = await withToken();
    expectWait(wait);
    expect(wait.token).toEqual({ issuedAt: wait.createdAt });
    expect(url).toBe(`https://rdv.example/v1/tokens/${encodeURIComponent(token)}/complete`);
    const again = await host.post("/v1/waits", {
      runId: `run-${runs}`,
      position: "approve",
      eventType: "human.approval",
      correlationId: `c-${runs}`,
      timeoutMs: 60_000,
      token: true,
    });
    expect(again.status).toBe(200);
    expect(again.body.token).toBeUndefined();
    expect(again.text).not.toContain(token);
    const read = await host.get(`/v1/waits/${wait.id}`);
    expect(read.text).not.toContain(token);
  });
});

describe("token routes", () => {
  it("complete: no credential, single use, then 409 not_waiting; the wait shows kind token", async () => {
    const { wait, token } = await withToken();
    const path = `/v1/tokens/${encodeURIComponent(token)}`;
    const done = await anyone.post(`${path}/complete`, { payload: { approved: true } });
    expect(done.status, done.text).toBe(200);
    expect(done.body).toEqual({ waitId: wait.id, state: "resolved", outcome: "success" });
    expectError(await anyone.post(`${path}/complete`, {}), 409, "not_waiting");
    expectError(await anyone.post(`${path}/fail`, { error: { message: "no" } }), 409, "not_waiting");
    const read = (await host.get(`/v1/waits/${wait.id}`)).body.wait;
    expect(read.resolution).toMatchObject({ kind: "token", outcome: "success", payload: { approved: true } });
    const explained = (await host.get(`/v1/waits/${wait.id}/explain`)).body;
    expect(explained).toMatchObject({ verdict: "resolved", details: { resolution: { kind: "token" } } });
  });

  it("fail: the error body is kept; a bad body is 400 invalid_request, one over maxPayloadBytes 413, and changes nothing", async () => {
    const { wait, token } = await withToken();
    const path = `/v1/tokens/${encodeURIComponent(token)}`;
    expectIssues(await anyone.post(`${path}/fail`, {}), "invalid_request");
    expectIssues(await anyone.post(`${path}/fail`, { error: { message: "" } }), "invalid_request");
    expectIssues(await anyone.post(`${path}/complete`, { payload: [1] }), "invalid_request");
    const big = await anyone.post(`${path}/complete`, { payload: { pad: "x".repeat(70_000) } });
    expectError(big, 413, "payload_too_large");
    expect((await host.get(`/v1/waits/${wait.id}`)).body.wait.state).toBe("waiting");
    const failed = await anyone.post(`${path}/fail`, { error: { message: "declined", code: "E1", details: { a: 1 } } });
    expect(failed.body).toEqual({ waitId: wait.id, state: "resolved", outcome: "failure" });
    expect((await host.get(`/v1/waits/${wait.id}`)).body.wait.resolution).toMatchObject({
      kind: "token",
      outcome: "failure",
      error: { message: "declined", code: "E1", details: { a: 1 } },
    });
  });

  it("a bad token is 404 token_invalid, the same whatever is wrong", async () => {
    const { token } = await withToken();
    const tampered = `${token.slice(0, -2)}${token.endsWith("AA") ? "BB" : "AA"}`;
    for (const bad of ["x", "rt1~nope~nope", tampered, `rt1~w1.abc~${"A".repeat(43)}`, "a".repeat(100)]) {
      const r = await anyone.post(`/v1/tokens/${encodeURIComponent(bad)}/complete`, {});
      expectError(r, 404, "token_invalid");
      expect(Object.keys(r.body.error).sort()).toEqual(["code", "message"]);
    }
    // longer than any token: no such route
    expectError(await anyone.post(`/v1/tokens/${"a".repeat(101)}/complete`, {}), 404, "not_found");
  });

  it("a host rotates the token: the old one is 404, the new one works; another tenant's wait is 404", async () => {
    const { wait, token } = await withToken();
    expectError(await other.post(`/v1/waits/${wait.id}/token`), 404, "not_found");
    const rotated = await host.post(`/v1/waits/${wait.id}/token`);
    expect(rotated.status, rotated.text).toBe(200);
    const fresh = rotated.body.token.value as string;
    expect(fresh).not.toBe(token);
    expect(rotated.body.token.url).toContain(encodeURIComponent(fresh));
    expectError(await anyone.post(`/v1/tokens/${encodeURIComponent(token)}/complete`, {}), 404, "token_invalid");
    expect((await anyone.post(`/v1/tokens/${encodeURIComponent(fresh)}/complete`, {})).status).toBe(200);
    expectError(await host.post(`/v1/waits/${wait.id}/token`), 409, "not_waiting");
  });

  it("a deadline passed: 409 deadline_passed, the wait still waiting and unchanged", async () => {
    const { wait, token } = await withToken({ timeoutMs: 50 });
    await new Promise((r) => setTimeout(r, 80));
    const before = (await host.get(`/v1/waits/${wait.id}`)).body.wait;
    expectError(await anyone.post(`/v1/tokens/${encodeURIComponent(token)}/complete`, {}), 409, "deadline_passed");
    expect((await host.get(`/v1/waits/${wait.id}`)).body.wait).toEqual(before);
  });

  it("rate limited per wait: 429 rate_limited with Retry-After, nothing changed", async () => {
    await nextWindow();
    const { wait, token } = await withToken({ heartbeatMs: 60_000 });
    const path = `/v1/tokens/${encodeURIComponent(token)}/heartbeat`;
    const answers = [];
    for (let i = 0; i < PER_WAIT + 3; i++) answers.push(await anyone.post(path));
    const statuses = answers.map((a) => a.status);
    expect(statuses.filter((s) => s === 200).length).toBeLessThanOrEqual(PER_WAIT);
    const limited = answers.filter((a) => a.status === 429);
    expect(limited.length).toBeGreaterThanOrEqual(3);
    for (const a of limited) {
      expectError(a, 429, "rate_limited");
      expect(Number(a.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
    }
    const read = (await host.get(`/v1/waits/${wait.id}`)).body.wait;
    expect(read.heartbeat.count).toBe(statuses.filter((s) => s === 200).length);
    // guesses at one wait's token count towards it too
    await nextWindow();
    const guess = `rt1~${wait.id}~${"A".repeat(43)}`;
    const guesses = [];
    for (let i = 0; i < PER_WAIT + 1; i++) guesses.push((await anyone.post(`/v1/tokens/${guess}/complete`, {})).status);
    expect(guesses.slice(0, PER_WAIT).every((s) => s === 404 || s === 429)).toBe(true);
    expect(guesses.at(-1)).toBe(429);
  });

  it("rate limited per client address", async () => {
    await nextWindow();
    // all at once: sent one after another they can outlast the one-second window on a loaded machine
    const statuses = (
      await Promise.all(
        Array.from({ length: PER_ADDRESS + 2 }, (_, i) => anyone.post(`/v1/tokens/not-a-token-${i}/complete`, {})),
      )
    ).map((r) => r.status);
    expect(statuses.filter((s) => s === 429).length).toBeGreaterThanOrEqual(2);
    expect(statuses.every((s) => s === 404 || s === 429)).toBe(true);
  });
});

describe("heartbeats over HTTP", () => {
  it("host and token heartbeats move the deadline; a wait without heartbeatMs is 409 heartbeat_disabled", async () => {
    await nextWindow();
    const { wait, token } = await withToken({ heartbeatMs: 5000 });
    const beat = await host.post(`/v1/waits/${wait.id}/heartbeat`);
    expect(beat.status, beat.text).toBe(200);
    expect(Date.parse(beat.body.wait.deadline)).toBeGreaterThan(Date.now() + 4000);
    expect(beat.body.wait.heartbeat).toMatchObject({ intervalMs: 5000, count: 1 });
    const byToken = await anyone.post(`/v1/tokens/${encodeURIComponent(token)}/heartbeat`, {});
    expect(byToken.status, byToken.text).toBe(200);
    expect(byToken.body.waitId).toBe(wait.id);
    expect(Date.parse(byToken.body.deadline)).toBeGreaterThanOrEqual(Date.parse(beat.body.wait.deadline));
    const explained = (await host.get(`/v1/waits/${wait.id}/explain`)).body;
    expect(explained.details.heartbeat).toMatchObject({ intervalMs: 5000, count: 2, overdue: false });

    const plain = await withToken();
    expectError(await host.post(`/v1/waits/${plain.wait.id}/heartbeat`), 409, "heartbeat_disabled");
    expectError(
      await anyone.post(`/v1/tokens/${encodeURIComponent(plain.token)}/heartbeat`),
      409,
      "heartbeat_disabled",
    );
    expectError(await other.post(`/v1/waits/${wait.id}/heartbeat`), 404, "not_found");
  });

  it("explain says a heartbeat is overdue once the deadline has passed", async () => {
    const { wait } = await withToken({ heartbeatMs: 1000, timeoutMs: 30 });
    await new Promise((r) => setTimeout(r, 60));
    const explained = (await host.get(`/v1/waits/${wait.id}/explain`)).body;
    expect(explained.state).toBe("waiting");
    expect(explained.details.heartbeat).toMatchObject({ count: 0, overdue: true });
    expectError(await host.post(`/v1/waits/${wait.id}/heartbeat`), 409, "deadline_passed");
  });
});

describe("deliver with an outcome", () => {
  it("outcome failure with an error; an error without failure is 400", async () => {
    const { wait } = await withToken();
    expectIssues(
      await host.post("/v1/deliver", {
        eventType: "human.approval",
        correlationId: wait.correlationId,
        error: { message: "x" },
      }),
      "invalid_request",
    );
    const d = await host.post("/v1/deliver", {
      eventType: "human.approval",
      correlationId: wait.correlationId,
      outcome: "failure",
      error: { message: "rejected by a human" },
    });
    expect(d.body).toEqual({ delivered: [wait.id], matched: 1 });
    expect((await host.get(`/v1/waits/${wait.id}`)).body.wait.resolution).toMatchObject({
      kind: "deliver",
      outcome: "failure",
      error: { message: "rejected by a human" },
    });
  });
});

describe("a token is never logged", () => {
  it("not by the access log, nor by the request error logs (the token path segment is redacted)", async () => {
    const lines: string[] = [];
    const sink = { write: (line: string) => lines.push(line) };
    const logged = createResources({
      redisUrl: redisUrl(),
      prefix: uniquePrefix("tokl"),
      config: parseConfig({ partitions: 4, tenants: { acme: { hostKeys: ["hk_acme_tokl"] } } }),
      logger: pino({ level: "trace" }, sink),
    });
    const a = await buildApp({ res: logged, roles: ["api"], running: () => true, api: true, accessLog: "on" });
    try {
      await logged.redis.ping();
      const url = await a.listen({ host: "127.0.0.1", port: 0 });
      const h = client(url, bearer("hk_acme_tokl"));
      const r = await h.post("/v1/waits", {
        runId: "run-log",
        position: "p",
        eventType: "human.approval",
        correlationId: "c-log",
        token: true,
        heartbeatMs: 60_000,
      });
      const token = r.body.token.value as string;
      const path = `/v1/tokens/${encodeURIComponent(token)}`;
      const open = client(url);
      await open.post(`${path}/heartbeat`);
      await open.post(`${path}/fail`, { error: { message: "" } }); // 400
      await open.post(`${path}/complete`, {});
      await open.post(`${path}/complete`, {}); // 409
      for (let i = 0; i < 12; i++) await open.post(`${path}/heartbeat`); // 409s, then 429s
      const secret = token.split("~")[2] as string;
      expect(lines.length).toBeGreaterThan(5);
      expect(lines.join("\n")).not.toContain(secret);
      expect(lines.some((l) => l.includes("/v1/tokens/:token/complete"))).toBe(true);
    } finally {
      await a.close();
      await logged.close();
    }
  });

  it("redactTokenUrl replaces the token segment only", () => {
    expect(redactTokenUrl("/v1/tokens/rt1~w1.a~secret/complete?x=1")).toBe("/v1/tokens/<token>/complete?x=1");
    expect(redactTokenUrl("/v1/waits/w1.a")).toBe("/v1/waits/w1.a");
  });
});
