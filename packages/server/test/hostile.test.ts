/**
 * Hostile input against a real `rendezvous api` process over real sockets (issue #8,
 * beyond the ingest fuzz): slowloris headers and bodies, huge headers, 10,000
 * concurrent connections against the connection cap, a flood from one rate-limited
 * producer while another keeps being served, oversized batches, deeply nested JSON,
 * and prototype-pollution keys in payloads and wait metadata. Each gets its clear
 * error in the API shape, the server stays up, and nothing is stored (the Redis keys
 * of the prefix are compared before and after, rejection records aside).
 */
import { spawnSync } from "node:child_process";
import { connect, type Socket } from "node:net";
import { eventually, redisUrl } from "@rendezvous/testkit";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  bearer,
  type Client,
  client,
  expectError,
  expectIssues,
  producerKey,
  request,
  type Started,
  sleep,
  startServer,
} from "./e2e-helpers.js";

const MAX_PAYLOAD = 8192;
const CAP = 1000;
const HEADERS_TIMEOUT_MS = 1500;
const REQUEST_TIMEOUT_MS = 3000;
const FLOOD_RATE = 20;
const CONFIG = {
  partitions: 4,
  maxPayloadBytes: MAX_PAYLOAD,
  tenants: {
    acme: {
      hostKeys: ["hk_hostile"],
      producers: {
        billing: { keys: ["pk_hostile"], eventTypes: ["job.*"] },
        flood: { keys: ["pk_flood"], eventTypes: ["job.*"], rateLimitPerSec: FLOOD_RATE },
        calm: { keys: ["pk_calm"], eventTypes: ["job.*"], rateLimitPerSec: 100 },
      },
    },
  },
};

let server: Started;
let redis: Redis;
let host: Client;
let billing: Client;
let port: number;

beforeAll(async () => {
  server = await startServer({
    config: CONFIG,
    role: "api",
    env: {
      RENDEZVOUS_MAX_CONNECTIONS: String(CAP),
      // every client here is 127.0.0.1: the cap, not the per-address limit, is what these cases meet
      RENDEZVOUS_MAX_CONNECTIONS_PER_ADDRESS: String(CAP),
      RENDEZVOUS_HEADERS_TIMEOUT_MS: String(HEADERS_TIMEOUT_MS),
      RENDEZVOUS_REQUEST_TIMEOUT_MS: String(REQUEST_TIMEOUT_MS),
    },
  });
  port = Number(new URL(server.url).port);
  redis = new Redis(redisUrl());
  host = client(server.url, bearer("hk_hostile"));
  billing = client(server.url, producerKey("acme/billing", "pk_hostile"));
}, 60_000);

afterAll(async () => {
  if (!server) return;
  await redis?.quit();
  expect((await server.proc.terminate()).code).toBe(0);
});

/** Every key of the server's prefix and its content, rejection records aside. */
async function snapshot(): Promise<Record<string, unknown>> {
  const keys: string[] = [];
  let cursor = "0";
  do {
    const [next, batch] = await redis.scan(cursor, "MATCH", `*${server.prefix}*`, "COUNT", 1000);
    cursor = next;
    keys.push(...batch);
  } while (cursor !== "0");
  const out: Record<string, unknown> = {};
  for (const key of keys.sort()) {
    if (key.endsWith(":rj") || key.endsWith(":x")) continue;
    const type = await redis.type(key);
    if (type === "stream") out[key] = await redis.xrange(key, "-", "+");
    else if (type === "hash") out[key] = await redis.hgetall(key);
    else if (type === "zset") out[key] = await redis.zrange(key, "0", "-1", "WITHSCORES");
    else if (type === "string") out[key] = await redis.get(key);
    else out[key] = type;
  }
  return out;
}

/** A raw socket to the server that collects whatever comes back. */
function open(): Promise<{ socket: Socket; data: () => string; closed: Promise<number> }> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: "127.0.0.1", port });
    let data = "";
    socket.on("data", (d) => {
      data += d.toString();
    });
    const closed = new Promise<number>((r) => socket.once("close", () => r(Date.now())));
    socket.once("connect", () => resolve({ socket, data: () => data, closed }));
    socket.once("error", reject);
  });
}

/** The server's count of connections it closed to hold its caps (per address or in all). */
async function closedAtCaps(): Promise<number> {
  const text = await (await fetch(`${server.url}/metrics`)).text();
  let n = 0;
  for (const m of text.matchAll(/^rendezvous_http_connections_closed_total\{reason="(\w+)"\} (\d+)/gm)) {
    if (m[1] !== "keep_alive_timeout") n += Number(m[2]);
  }
  return n;
}

/** The status and JSON body of a raw HTTP answer. */
function parseRaw(raw: string): { status: number; body: { error?: { code?: string; message?: string } } } {
  const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(raw)?.[1] ?? 0);
  const json = raw.slice(raw.indexOf("\r\n\r\n") + 4);
  let body = {};
  try {
    body = JSON.parse(json);
  } catch {
    // no body
  }
  return { status, body };
}

/**
 * POSTs `body` to /v1/events/batch as billing over a raw socket, 64 KiB at a time,
 * declared by Content-Length or chunked, until the server answers; returns the first
 * answer (status line to the end of its Content-Length body) and closes.
 */
async function sendFat(body: string, framing: "content-length" | "chunked"): Promise<string> {
  const s = await open();
  s.socket.on("error", () => {}); // writing after the server's close is allowed to fail
  const length =
    framing === "content-length" ? `Content-Length: ${Buffer.byteLength(body)}` : "Transfer-Encoding: chunked";
  s.socket.write(
    `POST /v1/events/batch HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nRendezvous-Producer: acme/billing\r\nAuthorization: Bearer pk_hostile\r\n${length}\r\n\r\n`,
  );
  let connected = true;
  void s.closed.then(() => {
    connected = false;
  });
  for (let at = 0; at < body.length && connected && s.data() === ""; at += 65_536) {
    const piece = body.slice(at, at + 65_536);
    s.socket.write(framing === "chunked" ? `${Buffer.byteLength(piece).toString(16)}\r\n${piece}\r\n` : piece);
    await sleep(1);
  }
  const complete = () => {
    const raw = s.data();
    const end = raw.indexOf("\r\n\r\n");
    const declared = /content-length: (\d+)/i.exec(raw.slice(0, end));
    return end >= 0 && declared !== null && Buffer.byteLength(raw.slice(end + 4)) >= Number(declared[1]);
  };
  await eventually(() => complete() || !connected, 5000);
  s.socket.destroy();
  const raw = s.data();
  const end = raw.indexOf("\r\n\r\n");
  const declared = Number(/content-length: (\d+)/i.exec(raw.slice(0, end))?.[1] ?? 0);
  return raw.slice(0, end + 4 + declared);
}

async function stillServing(): Promise<void> {
  expect((await request(server.url, "GET", "/healthz")).status).toBe(200);
  const id = `alive-${Math.random().toString(36).slice(2)}`;
  expect((await billing.post("/v1/events", { id, type: "job.done", correlationId: id })).status).toBe(202);
}

describe("hostile input against a real api process", () => {
  it("slowloris headers: every trickling client is cut off with 408 after the headers timeout, others are served", async () => {
    const before = await snapshot();
    const slow = await Promise.all(Array.from({ length: 50 }, () => open()));
    const started = Date.now();
    for (const s of slow)
      s.socket.write("POST /v1/events HTTP/1.1\r\nHost: x\r\nRendezvous-Producer: acme/billing\r\n");
    let trickling = true;
    const trickle = (async () => {
      while (trickling) {
        for (const s of slow) if (!s.socket.destroyed) s.socket.write("X");
        await sleep(200);
      }
    })();
    await stillServing(); // served while 50 clients hold their headers open
    const closedAt = await Promise.all(slow.map((s) => s.closed));
    trickling = false;
    await trickle;
    for (const [i, s] of slow.entries()) {
      const answer = parseRaw(s.data());
      expect(answer.status).toBe(408);
      expect(answer.body.error?.code).toBe("invalid_request");
      expect((closedAt[i] as number) - started).toBeLessThan(HEADERS_TIMEOUT_MS + 2500);
    }
    const after = await snapshot();
    // the one live event above is the only change
    expect(Object.keys(after).length).toBeGreaterThanOrEqual(Object.keys(before).length);
  });

  it("slowloris body: a body trickled past the request timeout is cut off with 408 and nothing is stored", async () => {
    const before = await snapshot();
    const body = JSON.stringify({ id: "slow-body-1", type: "job.done", correlationId: "slow-body" });
    const s = await open();
    const started = Date.now();
    s.socket.write(
      `POST /v1/events HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\nRendezvous-Producer: acme/billing\r\nAuthorization: Bearer pk_hostile\r\n\r\n`,
    );
    let i = 0;
    while (!s.socket.destroyed && i < body.length - 1) {
      s.socket.write(body[i++] as string);
      await sleep(100);
    }
    const closed = await s.closed;
    expect(parseRaw(s.data()).status).toBe(408);
    expect(closed - started).toBeLessThan(REQUEST_TIMEOUT_MS + 2500);
    expect(await snapshot()).toEqual(before);
    expectError(await host.get("/v1/events/billing/slow-body-1"), 404, "not_found");
  });

  it("huge headers: one 64 KiB header or 300 headers answer 431 in the API shape; the server goes on", async () => {
    for (const headers of [
      { "x-big": "a".repeat(64 * 1024) },
      Object.fromEntries(Array.from({ length: 300 }, (_, i) => [`x-h${i}`, "b".repeat(100)])),
    ]) {
      const s = await open();
      const lines = Object.entries(headers).map(([k, v]) => `${k}: ${v}\r\n`);
      s.socket.write(`GET /healthz HTTP/1.1\r\nHost: x\r\n${lines.join("")}\r\n`);
      await s.closed;
      const answer = parseRaw(s.data());
      expect(answer.status).toBe(431);
      expect(answer.body.error?.code).toBe("invalid_request");
      expect(answer.body.error?.message).toMatch(/headers larger than 16384 bytes/);
    }
    await stillServing();
  });

  it("10,000 concurrent connections: the cap holds (connections over it are closed), the server serves again after", async () => {
    const limit = Number(spawnSync("sh", ["-c", "ulimit -n"]).stdout.toString().trim());
    const target = Number.isFinite(limit) ? Math.min(10_000, limit - 500) : 10_000;
    console.log(`hostile: opening ${target} connections (ulimit -n ${limit}, cap ${CAP})`);
    const closedBefore = await closedAtCaps();
    const sockets: Array<{ socket?: Socket; closed: boolean }> = [];
    for (let i = 0; i < target; i += 500) {
      const batch = await Promise.all(
        Array.from({ length: Math.min(500, target - i) }, async () => {
          const s = await open().catch(() => undefined);
          if (!s) return { socket: undefined, closed: true };
          const entry = { socket: s.socket, closed: false };
          void s.closed.then(() => {
            entry.closed = true;
          });
          return entry;
        }),
      );
      for (const b of batch) if (b.socket) sockets.push(b);
    }
    // connections the kernel completed but the server has not accepted yet look open for a moment
    const started = Date.now();
    const connected = await eventually(() => {
      const n = sockets.filter((s) => !s.closed).length;
      return n <= CAP ? n : undefined;
    }, 20_000);
    console.log(`hostile: ${sockets.length} connected, ${connected} still open after ${Date.now() - started} ms`);
    expect(sockets.length).toBeGreaterThanOrEqual(target * 0.95);
    expect(connected).toBeLessThanOrEqual(CAP);
    // and the ones under the cap, idle, are closed by the headers timeout: an idle flood frees itself
    await eventually(() => sockets.every((s) => s.closed), HEADERS_TIMEOUT_MS + 5000);
    for (const s of sockets) s.socket?.destroy();
    await sleep(300);
    await stillServing();
    // the cap was reached and held by closing newcomers over it: the server's own counter says so. (How
    // many sockets the client still sees open depends on how fast it opened them against the headers timeout.)
    const closedAtCap = (await closedAtCaps()) - closedBefore;
    console.log(`hostile: ${closedAtCap} connections closed by the server at its caps`);
    expect(closedAtCap).toBeGreaterThan(0);
  }, 60_000);

  it("a flood from one rate-limited producer gets 429 + Retry-After while another producer keeps getting 202", async () => {
    const flood = client(server.url, producerKey("acme/flood", "pk_flood"));
    const calm = client(server.url, producerKey("acme/calm", "pk_calm"));
    const floodFor = 3000;
    const end = Date.now() + floodFor;
    const tally = { accepted: 0, limited: 0, other: 0, retryAfter: new Set<string>() };
    const floodLoop = async (w: number) => {
      for (let n = 0; Date.now() < end; n++) {
        const r = await flood.post("/v1/events", { id: `f${w}-${n}`, type: "job.done", correlationId: `f${w}` });
        if (r.status === 202) tally.accepted++;
        else if (r.status === 429) {
          tally.limited++;
          expect(r.body.error.code).toBe("rate_limited");
          tally.retryAfter.add(String(r.headers.get("retry-after")));
        } else tally.other++;
      }
    };
    const calmLatencies: number[] = [];
    const calmLoop = async () => {
      for (let n = 0; n < 10; n++) {
        const t = Date.now();
        const r = await calm.post("/v1/events", { id: `calm-${n}`, type: "job.done", correlationId: "calm" });
        expect(r.status).toBe(202);
        calmLatencies.push(Date.now() - t);
        await sleep(50);
      }
    };
    await Promise.all([...Array.from({ length: 30 }, (_, w) => floodLoop(w)), calmLoop()]);
    console.log(
      `hostile: flood ${tally.accepted} accepted, ${tally.limited} limited; calm ${calmLatencies.length} sent, max ${Math.max(...calmLatencies)} ms`,
    );
    expect(tally.other).toBe(0);
    expect(tally.limited).toBeGreaterThan(tally.accepted);
    // one second's burst plus the rate over the flood (and a little slack for timing)
    expect(tally.accepted).toBeLessThanOrEqual(FLOOD_RATE * (floodFor / 1000 + 1) + 20);
    expect([...tally.retryAfter].every((v) => Number(v) >= 1)).toBe(true);
    expect(calmLatencies.length).toBe(10);
    expect(Math.max(...calmLatencies)).toBeLessThan(5000);
  }, 30_000);

  it("oversized batch: 501 events are 400 invalid_event, a body over 500 × maxPayloadBytes is 413; nothing stored", async () => {
    const before = await snapshot();
    const events = Array.from({ length: 501 }, (_, i) => ({ id: `big-${i}`, type: "job.done", correlationId: "big" }));
    const tooMany = await billing.post("/v1/events/batch", { events });
    expectIssues(tooMany, "invalid_event");
    expect(tooMany.body.error.issues[0].path).toEqual(["events"]);
    const fat = JSON.stringify({
      events: [{ id: "fat", type: "job.done", correlationId: "fat", payload: { x: "y".repeat(500 * MAX_PAYLOAD) } }],
    });
    // The server answers 413 as soon as it knows; these raw clients write the body a
    // piece at a time and stop once the answer is there.
    for (const framing of ["content-length", "chunked"] as const) {
      const answer = parseRaw(await sendFat(fat, framing));
      expect(answer.status, framing).toBe(413);
      expect(answer.body.error?.code, framing).toBe("payload_too_large");
    }
    // A client that writes the whole body first (fetch) still reads the 413: the server
    // discards the rest of the body instead of closing under it (a broken pipe, which a
    // retrying client would have retried).
    for (let n = 0; n < 5; n++) {
      expectError(await billing.call("POST", "/v1/events/batch", { raw: fat }), 413, "payload_too_large");
    }
    // the same for a host route (its bodies are bounded at 1 MiB)
    const fatWait = JSON.stringify({
      runId: "fat-run",
      position: "p",
      eventType: "job.done",
      correlationId: "fat",
      metadata: { x: "y".repeat(4 * 1024 * 1024) },
    });
    for (let n = 0; n < 3; n++) {
      expectError(await host.call("POST", "/v1/waits", { raw: fatWait }), 413, "payload_too_large");
    }
    expect(await snapshot()).toEqual(before);
    await stillServing();
  });

  it("deeply nested JSON: a clear 400 for payloads and wait metadata, no crash, nothing stored; shallow nesting passes", async () => {
    const before = await snapshot();
    const deep = (n: number) => `${'{"a":'.repeat(n)}1${"}".repeat(n)}`;
    const deepArr = (n: number) => `${"[".repeat(n)}${"]".repeat(n)}`;
    for (const payload of [deep(1000), `{"list":${deepArr(3000)}}`]) {
      const raw = `{"id":"deep","type":"job.done","correlationId":"deep","payload":${payload}}`;
      expect(raw.length).toBeLessThan(MAX_PAYLOAD);
      const r = await billing.call("POST", "/v1/events", { raw, headers: { "content-type": "application/json" } });
      const error = expectIssues(r, "invalid_event");
      expect(JSON.stringify(error.issues)).toMatch(/nest/);
      const b = await billing.call("POST", "/v1/events/batch", {
        raw: `{"events":[${raw}]}`,
        headers: { "content-type": "application/json" },
      });
      expect(b.status).toBe(200);
      expect(b.body.results[0]).toMatchObject({ status: "rejected", error: { code: "invalid_event" } });
    }
    for (const metadata of [deep(1500), deep(20_000), `{"list":${deepArr(50_000)}}`]) {
      const raw = `{"runId":"deep-run","position":"p","eventType":"job.done","correlationId":"deep","metadata":${metadata}}`;
      const r = await host.call("POST", "/v1/waits", { raw, headers: { "content-type": "application/json" } });
      expectIssues(r, "invalid_request");
    }
    expect(await snapshot()).toEqual(before);
    expect((await host.get("/v1/waits?runId=deep-run")).body.waits).toEqual([]);
    // 32 levels are fine
    const ok = await billing.call("POST", "/v1/events", {
      raw: `{"id":"shallow","type":"job.done","correlationId":"shallow","payload":${deep(32)}}`,
      headers: { "content-type": "application/json" },
    });
    expect(ok.status).toBe(202);
    const w = await host.call("POST", "/v1/waits", {
      raw: `{"runId":"shallow-run","position":"p","eventType":"job.done","correlationId":"shallow-w","metadata":${deep(32)}}`,
      headers: { "content-type": "application/json" },
    });
    expect(w.status).toBe(201);
    await stillServing();
  });

  it("prototype-pollution keys: __proto__ and constructor.prototype are refused everywhere (400, or that event of a batch; nothing stored); a plain constructor key is data", async () => {
    const before = await snapshot();
    const poisons = [
      '{"__proto__":{"polluted":true}}',
      '{"a":{"b":[{"__proto__":{"polluted":true}}]}}',
      '{"constructor":{"prototype":{"polluted":true}}}',
    ];
    for (const p of poisons) {
      const raw = `{"id":"poison","type":"job.done","correlationId":"poison","payload":${p}}`;
      const r = await billing.call("POST", "/v1/events", { raw, headers: { "content-type": "application/json" } });
      expectIssues(r, "invalid_event");
      const w = await host.call("POST", "/v1/waits", {
        raw: `{"runId":"poison-run","position":"p","eventType":"job.done","correlationId":"poison","metadata":${p}}`,
        headers: { "content-type": "application/json" },
      });
      expectIssues(w, "invalid_request");
      const top = await host.call("POST", "/v1/waits", {
        raw: `{"runId":"poison-run","position":"p","eventType":"job.done","correlationId":"poison","__proto__":{"timeoutMs":1}}`,
        headers: { "content-type": "application/json" },
      });
      expectIssues(top, "invalid_request");
    }
    // an envelope with the key is refused whole
    const envelope = await billing.call("POST", "/v1/events/batch", {
      raw: '{"events":[],"__proto__":{"polluted":true}}',
      headers: { "content-type": "application/json" },
    });
    expectIssues(envelope, "invalid_event");
    expect(await snapshot()).toEqual(before);
    expect((await host.get("/v1/waits?runId=poison-run")).body.waits).toEqual([]);
    // in a batch only the poisoned event is refused; the others go through
    const batch = await billing.call("POST", "/v1/events/batch", {
      raw: `{"events":[{"id":"poison-b","type":"job.done","correlationId":"poison","payload":${poisons[0]}},{"id":"clean-b","type":"job.done","correlationId":"clean"}]}`,
      headers: { "content-type": "application/json" },
    });
    expect(batch.status).toBe(200);
    expect(batch.body.results[0]).toMatchObject({ status: "rejected", error: { code: "invalid_event" } });
    expect(batch.body.results[0].error.issues[0].path).toEqual(["payload", "__proto__"]);
    expect(batch.body.results[1].status).toBe("accepted");
    expectError(await host.get("/v1/events/billing/poison-b"), 404, "not_found");
    expectError(await host.get("/v1/events/billing/poison"), 404, "not_found");

    // "constructor" on its own is an ordinary key: stored and answered as data
    const data = { constructor: "ctor", nested: { constructor: { name: "x" } } };
    const w = await host.post("/v1/waits", {
      runId: "ctor-run",
      position: "p",
      eventType: "job.done",
      correlationId: "ctor",
      metadata: data,
    });
    expect(w.status).toBe(201);
    expect(w.body.wait.metadata).toEqual(data);
    const e = await billing.post("/v1/events", {
      id: "ctor-evt",
      type: "job.done",
      correlationId: "ctor",
      payload: data,
    });
    expect(e.status).toBe(202);
    const read = await host.get(`/v1/waits/${w.body.wait.id}`);
    expect(read.body.wait.metadata).toEqual(data);
    // nothing reached Object.prototype in the server: answers carry no `polluted` anywhere
    expect(read.text).not.toContain("polluted");
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    await stillServing();
  });
});
