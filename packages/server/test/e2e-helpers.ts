/**
 * Helpers for the end-to-end tests: a real `rendezvous` CLI process started with a
 * config file and a unique RENDEZVOUS_PREFIX, and a small HTTP client (global
 * fetch only) with the assertions every test shares (error shape, times).
 */
import { createHmac } from "node:crypto";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type CliProcess, eventually, redisUrl, spawnCli, uniquePrefix } from "@rendezvous/testkit";
import { expect } from "vitest";

export interface Started {
  url: string;
  proc: CliProcess;
  prefix: string;
  dir: string;
  configFile: string;
}

export interface StartOptions {
  /** the config file's content */
  config: unknown;
  /** the CLI command @defaultValue "start" */
  role?: string;
  /** @defaultValue the run's private Redis */
  redis?: string;
  env?: Record<string, string | undefined>;
}

const LISTENING = /listening on (http:\/\/127\.0\.0\.1:\d+)/;

/** Starts the CLI (`<role> --config F --redis-url R --port 0`) and waits until it listens. */
export async function startServer(opts: StartOptions): Promise<Started> {
  const prefix = uniquePrefix("e");
  const dir = mkdtempSync(join(tmpdir(), "rdv-e2e-"));
  const configFile = join(dir, "config.json");
  writeFileSync(configFile, JSON.stringify(opts.config));
  const proc = spawnCli(
    [opts.role ?? "start", "--config", configFile, "--redis-url", opts.redis ?? redisUrl(), "--port", "0"],
    { RENDEZVOUS_PREFIX: prefix, ...opts.env },
  );
  const m = await proc.waitFor(LISTENING, 25_000);
  return { url: m[1] as string, proc, prefix, dir, configFile };
}

export { LISTENING };

export interface Res<T = Json> {
  status: number;
  headers: Headers;
  /** the parsed JSON body, or the raw text when it is not JSON */
  body: T;
  text: string;
}

// biome-ignore lint/suspicious/noExplicitAny: response bodies are read field by field
export type Json = any;

export interface RequestOptions {
  headers?: Record<string, string>;
  /** a JSON value (sent as application/json) */
  json?: unknown;
  /** a raw body (sent as given) */
  raw?: string | Uint8Array;
}

/** One HTTP request; never throws for a status. */
export async function request(base: string, method: string, path: string, opts: RequestOptions = {}): Promise<Res> {
  const headers: Record<string, string> = { ...opts.headers };
  let body: string | Uint8Array | undefined;
  if (opts.json !== undefined) {
    body = JSON.stringify(opts.json);
    headers["content-type"] ??= "application/json";
  } else if (opts.raw !== undefined) body = opts.raw;
  const res = await fetch(`${base}${path}`, { method, headers, body });
  const text = await res.text();
  let parsed: Json = text;
  try {
    parsed = text === "" ? text : JSON.parse(text);
  } catch {
    // not JSON
  }
  return { status: res.status, headers: res.headers, body: parsed, text };
}

/** A caller with fixed headers (a host key, a producer credential). */
export function client(base: string, headers: Record<string, string> = {}) {
  const call = (method: string, path: string, opts: RequestOptions = {}) =>
    request(base, method, path, { ...opts, headers: { ...headers, ...opts.headers } });
  return {
    get: (path: string, opts?: RequestOptions) => call("GET", path, opts),
    post: (path: string, json?: unknown, opts?: RequestOptions) => call("POST", path, { json, ...opts }),
    patch: (path: string, json?: unknown, opts?: RequestOptions) => call("PATCH", path, { json, ...opts }),
    delete: (path: string, opts?: RequestOptions) => call("DELETE", path, opts),
    call,
  };
}
export type Client = ReturnType<typeof client>;

export const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

/** Producer headers with a bearer key. */
export const producerKey = (producer: string, key: string) => ({
  "rendezvous-producer": producer,
  authorization: `Bearer ${key}`,
});

/** `Rendezvous-Signature` for a raw body. */
export function sign(secret: string, body: string, t = Math.floor(Date.now() / 1000)): string {
  return `t=${t},v1=${createHmac("sha256", secret).update(`${t}.${body}`).digest("hex")}`;
}

/** An API error answer: status, `{"error":{"code","message",...}}`. */
export function expectError(res: Res, status: number, code: string): Json {
  expect({ status: res.status, body: res.body }).toMatchObject({ status, body: { error: { code } } });
  expect(typeof res.body.error.message).toBe("string");
  return res.body.error;
}

/** An error answer with `issues` (a non-empty list of `{path, message}`). */
export function expectIssues(res: Res, code: "invalid_request" | "invalid_event"): Json {
  const error = expectError(res, 400, code);
  expect(Array.isArray(error.issues)).toBe(true);
  expect(error.issues.length).toBeGreaterThan(0);
  for (const issue of error.issues) {
    expect(Array.isArray(issue.path)).toBe(true);
    expect(typeof issue.message).toBe("string");
  }
  return error;
}

export const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const TIME_FIELDS = new Set(["at", "createdAt", "deadline", "since", "acceptedAt", "occurredAt"]);

/** Every time field found anywhere in `value` is ISO-8601 UTC with milliseconds (or null). */
export function expectTimes(value: unknown, where = "$"): number {
  let seen = 0;
  if (Array.isArray(value)) {
    for (const [i, v] of value.entries()) seen += expectTimes(v, `${where}[${i}]`);
  } else if (value && typeof value === "object") {
    for (const [k, v] of Object.entries(value)) {
      if (TIME_FIELDS.has(k) && v !== null) {
        expect(typeof v === "string" && ISO_MS.test(v), `${where}.${k} = ${JSON.stringify(v)}`).toBe(true);
        seen++;
      } else seen += expectTimes(v, `${where}.${k}`);
    }
  }
  return seen;
}

/** The fields of a Wait (docs/api.md, Waits). */
export const WAIT_FIELDS = [
  "id",
  "tenant",
  "runId",
  "position",
  "eventType",
  "correlationId",
  "state",
  "createdAt",
  "deadline",
  "externalJobId",
  "metadata",
  "resolution",
  "consumption",
  "lateEvents",
  "history",
];

export function expectWait(wait: Json): void {
  for (const f of WAIT_FIELDS) expect(wait, `wait.${f}`).toHaveProperty(f);
  expect(wait.id).toMatch(/^[A-Za-z0-9._-]+$/);
  expect(wait.id).not.toMatch(/^\d+$/);
  expect(["waiting", "resolved", "timed_out", "cancelled"]).toContain(wait.state);
  expect(Array.isArray(wait.history)).toBe(true);
  expect(wait.history[0]?.what).toBe("registered");
  expectTimes(wait);
}

/** Polls until `check` returns a truthy value. */
export const until = <T>(check: () => Promise<T | undefined | false | null>, ms = 15_000): Promise<T> =>
  eventually(check, ms, 50);

/** Polls a wait until its state is not `waiting`. */
export async function settled(host: Client, id: string, ms = 15_000): Promise<Json> {
  return until(async () => {
    const r = await host.get(`/v1/waits/${id}`);
    return r.status === 200 && r.body.wait.state !== "waiting" ? r.body.wait : undefined;
  }, ms);
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
