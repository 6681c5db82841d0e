/**
 * What an operator scrapes and reads (docs/operations.md, "Metrics" and "Access log"), with
 * real role processes (api, matcher, dispatcher apart) after a small workload: the HTTP request
 * metrics count the requests made, the queue gauge shows the continuations the roles queued, the
 * wait and refusal metrics carry the tenant, the process metrics carry the role, and the access
 * log has a line per request with its fields and never a credential.
 */

import { createResources, parseConfig } from "@rendezvous/engine";
import { AccessLog, buildApp, ERRORS_4XX_PER_SEC } from "@rendezvous/http";
import { type CliProcess, redisUrl, spawnCli, trackOpen, uniquePrefix } from "@rendezvous/testkit";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  bearer,
  type Client,
  client,
  LISTENING,
  producerKey,
  request,
  type Started,
  sign,
  startServer,
  until,
} from "./e2e-helpers.js";

const ADMIN = "adm_observability_secret";
const HOST_KEY = "hk_acme_observability_secret";
const PRODUCER_KEY = "pk_billing_observability_secret";
const SECRET = "whsec_observability_secret";
const CONFIG = {
  partitions: 4,
  adminToken: ADMIN,
  claimIdleMs: 1000,
  tenants: {
    acme: {
      hostKeys: [HOST_KEY],
      producers: { billing: { keys: [PRODUCER_KEY], secrets: [SECRET], eventTypes: ["order.*"] } },
    },
    beta: { hostKeys: ["hk_beta_observability"] },
  },
};

interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** The samples of a Prometheus text exposition. */
function parseMetrics(text: string): Sample[] {
  const out: Sample[] = [];
  for (const line of text.split("\n")) {
    if (line === "" || line.startsWith("#")) continue;
    const m = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m) continue;
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? "").matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) labels[l[1] as string] = l[2] as string;
    out.push({ name: m[1] as string, labels, value: Number(m[3]) });
  }
  return out;
}

/** The value of the one sample of `name` whose labels include `labels` (undefined when none). */
function value(samples: Sample[], name: string, labels: Record<string, string> = {}): number | undefined {
  const found = samples.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));
  if (found.length > 1) throw new Error(`${name} ${JSON.stringify(labels)}: ${found.length} samples`);
  return found[0]?.value;
}

async function scrape(url: string): Promise<Sample[]> {
  const r = await request(url, "GET", "/metrics");
  expect(r.status).toBe(200);
  return parseMetrics(r.text);
}

let api: Started;
let matcher: CliProcess;
let dispatcher: CliProcess;
let matcherUrl: string;
let host: Client;
let billing: Client;
const run = Date.now().toString(36);

beforeAll(async () => {
  api = await startServer({ config: CONFIG, role: "api", env: { RENDEZVOUS_ACCESS_LOG: "on" } });
  const role = (name: string) =>
    spawnCli([name, "--config", api.configFile, "--redis-url", redisUrl(), "--port", "0"], {
      RENDEZVOUS_PREFIX: api.prefix,
    });
  matcher = role("matcher");
  dispatcher = role("dispatcher");
  matcherUrl = (await matcher.waitFor(LISTENING, 25_000))[1] as string;
  await dispatcher.waitFor(LISTENING, 25_000);
  host = client(api.url, bearer(HOST_KEY));
  billing = client(api.url, producerKey("acme/billing", PRODUCER_KEY));
}, 60_000);

afterAll(async () => {
  await Promise.all([matcher, dispatcher].filter(Boolean).map((p) => p.terminate()));
  if (api) expect((await api.proc.terminate()).code).toBe(0);
});

describe("metrics and the access log after a small workload", () => {
  let signature = "";

  it("counts requests by route, method and status; the queue gauge shows the continuations", async () => {
    for (let i = 1; i <= 4; i++) {
      const r = await host.post("/v1/waits", {
        runId: `run-${run}-${i}`,
        position: "p",
        eventType: "order.paid",
        correlationId: `c-${run}-${i}`,
      });
      expect(r.status, r.text).toBe(201);
    }
    for (let i = 1; i <= 2; i++) {
      const r = await billing.post("/v1/events", {
        id: `e-${run}-${i}`,
        type: "order.paid",
        correlationId: `c-${run}-${i}`,
      });
      expect(r.status, r.text).toBe(202);
    }
    const raw = JSON.stringify({ id: `e-${run}-3`, type: "order.paid", correlationId: `c-${run}-3` });
    signature = sign(SECRET, raw);
    const signed = await request(api.url, "POST", "/v1/events", {
      raw,
      headers: {
        "content-type": "application/json",
        "rendezvous-producer": "acme/billing",
        "rendezvous-signature": signature,
      },
    });
    expect(signed.status, signed.text).toBe(202);
    const refused = await client(api.url, producerKey("acme/billing", "pk_wrong")).post("/v1/events", {
      id: `e-${run}-x`,
      type: "order.paid",
      correlationId: "x",
    });
    expect(refused.status).toBe(401);
    const invalid = await billing.post("/v1/events", { id: `e-${run}-bad`, type: "order.paid" });
    expect(invalid.status).toBe(400);
    expect((await host.get("/nowhere")).status).toBe(404);
    expect((await client(api.url, bearer(ADMIN)).get("/v1/waits?tenant=acme")).status).toBe(200);

    // three waits resolved; the dispatcher queues their continuations (no worker takes them)
    const m = await until(async () => {
      const s = await scrape(api.url);
      return value(s, "rendezvous_queue_jobs", { queue: "continuations.acme", state: "waiting" }) === 3 && s;
    });
    const requests = (labels: Record<string, string>) => value(m, "rendezvous_http_requests_total", labels);
    expect(requests({ route: "/v1/waits", method: "POST", status: "201" })).toBe(4);
    expect(requests({ route: "/v1/events", method: "POST", status: "202" })).toBe(3);
    expect(requests({ route: "/v1/events", method: "POST", status: "401" })).toBe(1);
    expect(requests({ route: "/v1/events", method: "POST", status: "400" })).toBe(1);
    expect(requests({ route: "unmatched", method: "GET", status: "404" })).toBe(1);
    expect(requests({ route: "/v1/waits", method: "GET", status: "200" })).toBe(1);
    const count = value(m, "rendezvous_http_request_duration_seconds_count", { route: "/v1/events", method: "POST" });
    expect(count).toBe(5);
    const sum = value(m, "rendezvous_http_request_duration_seconds_sum", { route: "/v1/events", method: "POST" });
    expect(sum).toBeGreaterThan(0);
    expect(sum).toBeLessThan(30);
    const fast = value(m, "rendezvous_http_request_duration_seconds_bucket", {
      route: "/v1/events",
      method: "POST",
      le: "10",
    });
    expect(fast).toBe(5);
    const age = value(m, "rendezvous_queue_oldest_waiting_age_seconds", { queue: "continuations.acme" });
    expect(age).toBeGreaterThanOrEqual(0);
    expect(age).toBeLessThan(60);
    expect(value(m, "rendezvous_queue_oldest_waiting_age_seconds", { queue: "timeouts" })).toBe(0);
    // every state of every queue, the empty ones at 0
    for (const queue of ["continuations.acme", "continuations.beta", "timeouts", "webhooks"]) {
      for (const state of ["waiting", "active", "delayed", "completed", "failed"]) {
        const expected = queue === "continuations.acme" && state === "waiting" ? 3 : 0;
        expect(value(m, "rendezvous_queue_jobs", { queue, state }), `${queue} ${state}`).toBe(expected);
      }
    }
  });

  it("waits, refusals and resolutions carry the tenant; process metrics the role", async () => {
    const m = await scrape(api.url);
    expect(value(m, "rendezvous_waits", { state: "waiting", tenant: "acme" })).toBe(1);
    expect(value(m, "rendezvous_waits", { state: "settled", tenant: "acme" })).toBe(3);
    expect(value(m, "rendezvous_waits", { state: "waiting", tenant: "beta" })).toBe(0);
    expect(value(m, "rendezvous_waits", { state: "waiting", tenant: "other" })).toBe(0);
    expect(value(m, "rendezvous_events_rejected_total", { reason: "unauthorized", tenant: "unknown" })).toBe(1);
    expect(value(m, "rendezvous_events_rejected_total", { reason: "invalid_event", tenant: "acme" })).toBe(1);
    expect(value(m, "rendezvous_events_accepted_total", { tenant: "acme" })).toBe(3);
    expect(value(m, "process_cpu_seconds_total", { role: "api" })).toBeGreaterThan(0);
    expect(value(m, "process_resident_memory_bytes", { role: "api" })).toBeGreaterThan(0);
    expect(value(m, "nodejs_eventloop_lag_seconds", { role: "api" })).toBeGreaterThanOrEqual(0);

    const w = await scrape(matcherUrl);
    expect(value(w, "rendezvous_resolutions_total", { kind: "event", tenant: "acme" })).toBe(3);
    expect(value(w, "process_cpu_seconds_total", { role: "matcher" })).toBeGreaterThan(0);
    // every process that serves /metrics reads the queues
    expect(value(w, "rendezvous_queue_jobs", { queue: "continuations.acme", state: "waiting" })).toBe(3);
  });

  it("the access log has one line per request with its fields, and no credential", async () => {
    const lines = api.proc
      .output()
      .split("\n")
      .filter((l) => l.startsWith("{"))
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .filter((l) => l.system === "access");
    const events = lines.filter((l) => l.route === "/v1/events" && l.method === "POST");
    expect(events.map((l) => l.status).sort()).toEqual([202, 202, 202, 400, 401]);
    const accepted = events.find((l) => l.status === 202) as Record<string, unknown>;
    expect(accepted).toMatchObject({ msg: "request", tenant: "acme", producer: "billing", client: "127.0.0.1" });
    expect(typeof accepted.reqId).toBe("string");
    expect(accepted.ms).toBeGreaterThan(0);
    expect(accepted.bytesIn).toBeGreaterThan(0);
    expect(accepted.bytesOut).toBeGreaterThan(0);
    // a refused credential names no one
    const refused = events.find((l) => l.status === 401) as Record<string, unknown>;
    expect(refused.tenant).toBeUndefined();
    expect(refused.producer).toBeUndefined();
    expect(lines.find((l) => l.route === "/v1/waits" && l.method === "POST")).toMatchObject({
      tenant: "acme",
      status: 201,
    });
    expect(lines.find((l) => l.route === "/v1/waits" && l.method === "GET")).toMatchObject({
      admin: true,
      status: 200,
    });
    expect(lines.find((l) => l.route === "unmatched")).toMatchObject({ status: 404, method: "GET" });
    // no credential, header value or body anywhere in the process's output
    const output = api.proc.output();
    for (const secret of [ADMIN, HOST_KEY, PRODUCER_KEY, SECRET, "pk_wrong", signature, signature.split("v1=")[1]]) {
      expect(output).not.toContain(secret);
    }
  });
});

describe("RENDEZVOUS_ACCESS_LOG", () => {
  it("`errors` writes the 4xx/5xx lines only, `off` none", async () => {
    for (const mode of ["errors", "off"] as const) {
      const lines: Array<Record<string, unknown>> = [];
      const logger = pino({ level: "info" }, { write: (l: string) => lines.push(JSON.parse(l)) });
      const res = createResources({
        redisUrl: redisUrl(),
        prefix: uniquePrefix("o"),
        config: parseConfig(CONFIG),
        logger,
      });
      trackOpen({ quit: () => res.close() });
      const app = await buildApp({ res, roles: ["api"], running: () => true, accessLog: mode });
      try {
        expect((await app.inject({ method: "GET", url: "/healthz" })).statusCode).toBe(200);
        expect((await app.inject({ method: "GET", url: "/nowhere" })).statusCode).toBe(404);
        const access = lines.filter((l) => l.system === "access");
        expect(access.map((l) => l.status)).toEqual(mode === "errors" ? [404] : []);
      } finally {
        await app.close();
        await res.close();
      }
    }
  });

  it("`errors` writes at most ERRORS_4XX_PER_SEC 4xx lines a second, says how many it skipped, and every 5xx", () => {
    const lines: Array<Record<string, unknown>> = [];
    const logger = pino({ level: "info" }, { write: (l: string) => lines.push(JSON.parse(l)) });
    const clock = { now: 1_900_000_000_000 };
    const log = new AccessLog(logger as never, "errors", () => clock.now);
    const request = { id: "r", headers: {}, socket: { remoteAddress: "10.0.0.1" } } as never;
    const answer = (statusCode: number) => ({ statusCode, elapsedTime: 1, getHeader: () => undefined }) as never;
    for (let i = 0; i < ERRORS_4XX_PER_SEC + 50; i++) log.write(request, answer(401), "/v1/events", "POST");
    log.write(request, answer(503), "/v1/events", "POST");
    log.write(request, answer(202), "/v1/events", "POST");
    expect(lines.filter((l) => l.status === 401)).toHaveLength(ERRORS_4XX_PER_SEC);
    expect(lines.filter((l) => l.status === 503)).toHaveLength(1);
    expect(lines.filter((l) => l.status === 202)).toHaveLength(0);
    clock.now += 1000;
    log.write(request, answer(404), "unmatched", "GET");
    expect(lines.find((l) => l.skipped4xx !== undefined)).toMatchObject({ skipped4xx: 50, system: "access" });
    expect(lines.at(-1)).toMatchObject({ status: 404, route: "unmatched", client: "10.0.0.1" });
  });
});
