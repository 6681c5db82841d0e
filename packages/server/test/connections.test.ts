/**
 * Connection hygiene of a real `rendezvous api` process (docs/api.md, Connections), with small
 * limits so each rule is seen on a handful of raw sockets: an idle keep-alive connection is
 * closed after the keep-alive timeout; one address may hold at most its share; at the cap the
 * idlest connection is closed for a newcomer (silent ones and idle keep-alive ones alike,
 * longest idle first), never one with a request in flight; the metrics count each.
 */
import { eventually } from "@rendezvous/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Started, startServer } from "./e2e-helpers.js";
import { answers, exchange, HEALTHZ, openRaw, type RawConn } from "./hostile/connections.attacks.js";

const CAP = 12;
const PER_ADDRESS = 5;
const KEEP_ALIVE_MS = 1000;
const HOST_KEY = "hk_conn";

let server: Started;
let port: number;
const opened: RawConn[] = [];

beforeAll(async () => {
  server = await startServer({
    config: { partitions: 2, tenants: { acme: { hostKeys: [HOST_KEY], producers: {} } } },
    role: "api",
    env: {
      RENDEZVOUS_MAX_CONNECTIONS: String(CAP),
      RENDEZVOUS_MAX_CONNECTIONS_PER_ADDRESS: String(PER_ADDRESS),
      RENDEZVOUS_KEEP_ALIVE_TIMEOUT_MS: String(KEEP_ALIVE_MS),
    },
  });
  port = Number(new URL(server.url).port);
}, 60_000);

afterAll(async () => {
  for (const c of opened) c.socket.destroy();
  if (server) expect((await server.proc.terminate()).code).toBe(0);
});

async function raw(localAddress: string): Promise<RawConn> {
  const c = await openRaw(port, localAddress);
  opened.push(c);
  // let the server accept it before the next one (the order is what the idle order is made of)
  await new Promise((r) => setTimeout(r, 30));
  return c;
}

/** GET on a fresh connection from `localAddress` that the server closes after the answer. */
async function once(path: string, localAddress = "127.0.0.1"): Promise<{ status: number; body: string }> {
  const c = await openRaw(port, localAddress);
  const a = await exchange(c, `GET ${path} HTTP/1.1\r\nHost: rendezvous\r\nConnection: close\r\n\r\n`);
  c.socket.destroy();
  return { status: a?.status ?? 0, body: a?.body ?? "" };
}

/** The server's connection metrics (the gauge counts the connection asking). */
async function connectionMetrics(): Promise<{ open: number; closed: Record<string, number> }> {
  const text = (await once("/metrics")).body;
  const open = Number(/^rendezvous_http_connections_open (\d+)/m.exec(text)?.[1] ?? -1);
  const closed: Record<string, number> = {};
  for (const m of text.matchAll(/^rendezvous_http_connections_closed_total\{reason="(\w+)"\} (\d+)/gm)) {
    closed[m[1] as string] = Number(m[2]);
  }
  return { open, closed };
}

/** Closes this test's sockets and waits until only the asking connection is open. */
async function reset(): Promise<void> {
  for (const c of opened.splice(0)) c.socket.destroy();
  await eventually(async () => (await connectionMetrics()).open === 1, 10_000, 100);
}

/** A `POST /v1/waits` whose body never completes: in flight until the request timeout. */
const PARTIAL_POST = `POST /v1/waits HTTP/1.1\r\nHost: rendezvous\r\nAuthorization: Bearer ${HOST_KEY}\r\nContent-Type: application/json\r\nContent-Length: 200\r\n\r\n{"runId":`;

describe("connection hygiene of a real api process", () => {
  it("an idle keep-alive connection is closed after the keep-alive timeout (Node adds 1 s), reused before it", async () => {
    await reset();
    const c = await raw("127.0.0.1");
    const first = await exchange(c, HEALTHZ);
    expect(first?.status).toBe(200);
    expect(first?.headers).toMatch(/keep-alive: timeout=1/);
    await new Promise((r) => setTimeout(r, KEEP_ALIVE_MS / 2));
    expect((await exchange(c, HEALTHZ))?.status, "reused within the timeout").toBe(200);
    const idleFrom = Date.now();
    const closedAt = await c.whenClosed;
    const idleMs = closedAt - idleFrom;
    expect(idleMs).toBeGreaterThanOrEqual(KEEP_ALIVE_MS - 50);
    expect(idleMs).toBeLessThan(KEEP_ALIVE_MS + 1000 + 1500);
    expect(answers(c.data())).toHaveLength(2); // closed quietly, no answer of its own
    expect((await connectionMetrics()).closed.keep_alive_timeout).toBeGreaterThanOrEqual(1);
  });

  it("one address holds at most its limit: the next connection from it is closed at once, others are served", async () => {
    await reset();
    const before = (await connectionMetrics()).closed.per_address_limit ?? 0;
    const held = [];
    for (let i = 0; i < PER_ADDRESS; i++) held.push(await raw("127.0.0.2"));
    const extra = await raw("127.0.0.2");
    const closedAt = await Promise.race([extra.whenClosed, new Promise((r) => setTimeout(() => r(0), 2000))]);
    expect(closedAt, "the connection over the limit is closed").not.toBe(0);
    expect(extra.data()).toBe("");
    expect(held.every((c) => !c.closed())).toBe(true);
    expect((await once("/healthz")).status).toBe(200);
    expect((await once("/healthz", "127.0.0.3")).status).toBe(200);
    // a freed slot is usable again
    held[0]?.socket.destroy();
    await held[0]?.whenClosed;
    await new Promise((r) => setTimeout(r, 100));
    const again = await raw("127.0.0.2");
    expect((await exchange(again, HEALTHZ))?.status).toBe(200);
    expect((await connectionMetrics()).closed.per_address_limit).toBe(before + 1);
  });

  it("at the cap the idlest connection is closed for a newcomer: silent ones first, then idle keep-alive ones; never one in flight", async () => {
    await reset();
    const before = (await connectionMetrics()).closed.idle_evicted ?? 0;
    // the cap, filled in this order: 5 silent, 5 idle after one request, 2 with a request in flight
    const silent = [];
    for (let i = 0; i < 5; i++) silent.push(await raw("127.0.0.2"));
    const kept = [];
    for (let i = 0; i < 5; i++) {
      const c = await raw("127.0.0.3");
      expect((await exchange(c, HEALTHZ))?.status).toBe(200);
      kept.push(c);
    }
    const busy = [await raw("127.0.0.4"), await raw("127.0.0.4")];
    for (const c of busy) c.socket.write(PARTIAL_POST);
    await new Promise((r) => setTimeout(r, 100));
    // newcomers from addresses of their own each get served and stay open (idle keep-alive)
    for (let n = 0; n < 7; n++) {
      const newcomer = await raw(`127.0.1.${n + 1}`);
      expect((await exchange(newcomer, HEALTHZ))?.status, `newcomer ${n}`).toBe(200);
      const idle = [...silent, ...kept];
      await eventually(() => idle[n]?.closed(), 2000).catch(() => undefined);
      await new Promise((r) => setTimeout(r, 30)); // time for a wrong one to be seen closed too
      const closed = idle.map((c) => c.closed());
      // the longest idle goes first: the silent ones in their order, then the kept-alive ones
      expect(closed, `after newcomer ${n}`).toEqual(idle.map((_, i) => i <= n));
      expect(busy.every((c) => !c.closed())).toBe(true);
    }
    expect((await connectionMetrics()).closed.idle_evicted).toBeGreaterThanOrEqual(before + 7);
  });

  it("at the cap a connection part-way through its headers is closed only after the ones that sent nothing", async () => {
    await reset();
    const sending = await raw("127.0.0.2");
    sending.socket.write("GET /healthz HTTP/1.1\r\nHost: rendezvous\r\n"); // the blank line is still to come
    const silent: RawConn[] = [];
    for (let i = 1; i < CAP; i++) silent.push(await raw(`127.0.3.${Math.floor(i / PER_ADDRESS) + 1}`));
    const newcomer = await raw("127.0.1.1");
    expect((await exchange(newcomer, HEALTHZ))?.status).toBe(200);
    await eventually(() => silent[0]?.closed(), 2000);
    expect(sending.closed(), "the one sending its headers is kept").toBe(false);
    expect(silent.slice(1).every((c) => !c.closed())).toBe(true);
    expect((await exchange(sending, "\r\n"))?.status, "and answered once its headers are complete").toBe(200);
  });

  it("at the cap with every connection in flight the newcomer is closed at once; once one is answered it makes room", async () => {
    await reset();
    const before = (await connectionMetrics()).closed.at_cap ?? 0;
    const busy: RawConn[] = [];
    for (let i = 0; i < CAP; i++) {
      const c = await raw(`127.0.2.${Math.floor(i / PER_ADDRESS) + 1}`);
      c.socket.write(PARTIAL_POST);
      busy.push(c);
    }
    await new Promise((r) => setTimeout(r, 100));
    const refused = await raw("127.0.0.1");
    const closedAt = await Promise.race([refused.whenClosed, new Promise((r) => setTimeout(() => r(0), 2000))]);
    expect(closedAt, "the newcomer is closed").not.toBe(0);
    expect(
      busy.every((c) => !c.closed()),
      "no request in flight was cut off",
    ).toBe(true);
    // finish one request: it is answered and goes idle, so the next newcomer takes its place
    const first = busy[0] as RawConn;
    const rest = '"r-cap","position":"p","eventType":"job.done","correlationId":"c-cap"}';
    const answered = await exchange(first, rest.padEnd(200 - '{"runId":'.length, " "));
    expect(answered?.status).toBe(201);
    const newcomer = await raw("127.0.0.1");
    expect((await exchange(newcomer, HEALTHZ))?.status).toBe(200);
    await eventually(() => first.closed(), 2000);
    expect(busy.slice(1).every((c) => !c.closed())).toBe(true);
    const m = await connectionMetrics();
    expect(m.closed.at_cap).toBeGreaterThanOrEqual(before + 1);
  });
});
