/**
 * Credentials before bodies, over real sockets: a producer refused by its headers gets
 * 401 before it sends a body byte and its connection is closed; a signed request's
 * body is read, counted against the body budget (per process and per client address),
 * and what it held is given back however the request ends.
 */
import { createHmac } from "node:crypto";
import { connect, type Socket } from "node:net";
import { Writable } from "node:stream";
import { createMetrics, createRedis, parseConfig, Store } from "@rendezvous/engine";
import { redisUrl, trackOpen, uniquePrefix } from "@rendezvous/testkit";
import Fastify from "fastify";
import { pino } from "pino";
import { describe, expect, it, vi } from "vitest";
import { BodyBudget, clientKey, frameworkErrors, ingestRoutes } from "../src/index.js";
import { CONFIG, ev, nowSec } from "./helpers.js";

const ATTACKER = "127.0.0.2";
const LEGIT = "127.0.0.1";

interface Served {
  port: number;
  budget: BodyBudget;
  metrics: ReturnType<typeof createMetrics>;
  logs: Array<{ level: number; msg: string }>;
}

async function serve(budget = { totalBytes: 600_000, perClientBytes: 400_000 }): Promise<Served> {
  const redis = createRedis(redisUrl(), { name: "bodies-test" });
  const config = parseConfig(CONFIG);
  const store = new Store({ redis, prefix: uniquePrefix("bod"), config });
  const logs: Served["logs"] = [];
  const sink = new Writable({
    write(line, _enc, done) {
      logs.push(JSON.parse(line.toString()));
      done();
    },
  });
  const bodyBudget = new BodyBudget(budget);
  const metrics = createMetrics();
  const app = Fastify({ logger: false, frameworkErrors });
  await app.register(ingestRoutes, {
    store,
    config,
    metrics,
    logger: pino({ level: "debug" }, sink),
    bodyBudget,
  });
  await app.listen({ host: LEGIT, port: 0 });
  trackOpen(app);
  trackOpen(redis);
  return { port: (app.server.address() as { port: number }).port, budget: bodyBudget, metrics, logs };
}

interface Conn {
  socket: Socket;
  /** everything received so far */
  data: () => string;
  closed: Promise<void>;
  isClosed: () => boolean;
}

function open(port: number, localAddress: string): Promise<Conn> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: LEGIT, port, localAddress });
    let data = "";
    let closed = false;
    socket.on("data", (d) => {
      data += d.toString();
    });
    const done = new Promise<void>((r) =>
      socket.once("close", () => {
        closed = true;
        r();
      }),
    );
    socket.on("error", () => {});
    socket.once("connect", () => resolve({ socket, data: () => data, closed: done, isClosed: () => closed }));
    socket.once("error", reject);
  });
}

/** Retries an assertion until it holds (or `ms` pass). */
const until = (check: () => void, ms = 10_000) => vi.waitFor(check, { timeout: ms, interval: 20 });

function status(raw: string): number {
  return Number(/^HTTP\/1\.1 (\d{3})/.exec(raw)?.[1] ?? 0);
}

function head(path: string, headers: Record<string, string>): string {
  const lines = Object.entries(headers).map(([k, v]) => `${k}: ${v}\r\n`);
  return `POST ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n${lines.join("")}\r\n`;
}

const sign = (secret: string, body: string, t = nowSec()) =>
  `t=${t},v1=${createHmac("sha256", secret).update(`${t}.${body}`).digest("hex")}`;

/** A valid batch of one event, padded with whitespace to `bytes`. */
function paddedBatch(id: string, bytes: number): string {
  const body = JSON.stringify({ events: [ev(id)] });
  return body + " ".repeat(Math.max(0, bytes - body.length));
}

describe("credentials before bodies", () => {
  const refused: Array<[string, Record<string, string>]> = [
    ["a wrong bearer key", { "Rendezvous-Producer": "acme/billing", Authorization: "Bearer pk_wrong" }],
    ["an unknown producer with a key", { "Rendezvous-Producer": "acme/nobody", Authorization: "Bearer pk_billing" }],
    [
      "an unknown producer with a signature",
      { "Rendezvous-Producer": "acme/nobody", "Rendezvous-Signature": sign("x", "") },
    ],
    ["no producer", { Authorization: "Bearer pk_billing" }],
    ["no credential", { "Rendezvous-Producer": "acme/billing" }],
    [
      "a stale signature",
      { "Rendezvous-Producer": "acme/billing", "Rendezvous-Signature": sign("whsec_new", "", nowSec() - 600) },
    ],
    ["a malformed signature", { "Rendezvous-Producer": "acme/billing", "Rendezvous-Signature": "t=1,v1=zz" }],
    [
      "a signature from a producer with no secrets",
      { "Rendezvous-Producer": "acme/ship", "Rendezvous-Signature": sign("x", "") },
    ],
    [
      "a right signature beside a wrong key",
      {
        "Rendezvous-Producer": "acme/billing",
        Authorization: "Bearer pk_wrong",
        "Rendezvous-Signature": sign("whsec_new", ""),
      },
    ],
  ];
  for (const [what, headers] of refused) {
    it(`${what}: 401 unauthorized before any body byte is sent, then the connection is closed`, async () => {
      const s = await serve();
      // each declares as much as its route allows (more is 413, from the headers too)
      for (const [path, declared] of [
        ["/v1/events", 2048],
        ["/v1/events/batch", 1_000_000],
      ] as const) {
        const c = await open(s.port, ATTACKER);
        c.socket.write(head(path, { ...headers, "Content-Length": String(declared) }));
        await until(() => expect(status(c.data())).toBe(401), 3000);
        expect(c.data()).toContain('{"error":{"code":"unauthorized","message":"unauthorized"}}');
        expect(c.data().toLowerCase()).toContain("connection: close");
        await c.closed; // closed by the server: the body it declared is never read
        expect(s.budget.held).toBe(0);
      }
    });
  }

  it("a known producer's signature: the body is read under the route's bound, then verified", async () => {
    const s = await serve();
    const body = JSON.stringify(ev("signed"));
    for (const [signature, expected] of [
      [sign("whsec_new", body), 202],
      [sign("whsec_new", `${body} `), 401], // a valid header, an HMAC of other bytes
    ] as const) {
      const c = await open(s.port, LEGIT);
      c.socket.write(
        head("/v1/events", {
          "Rendezvous-Producer": "acme/billing",
          "Rendezvous-Signature": signature,
          "Content-Length": String(body.length),
        }),
      );
      await new Promise((r) => setTimeout(r, 200));
      expect(c.data()).toBe(""); // it waits for the body it must verify
      await until(() => expect(s.budget.held).toBe(body.length));
      c.socket.write(body);
      await until(() => expect(status(c.data())).toBe(expected));
      c.socket.destroy();
      await until(() => expect(s.budget.held).toBe(0));
    }
    // beyond the bound: 413 without the body being counted
    const c = await open(s.port, ATTACKER);
    c.socket.write(
      head("/v1/events", {
        "Rendezvous-Producer": "acme/billing",
        "Rendezvous-Signature": sign("whsec_new", ""),
        "Content-Length": String((CONFIG.maxPayloadBytes as number) + 1),
      }),
    );
    await until(() => expect(status(c.data())).toBe(413));
    expect(s.budget.held).toBe(0);
    c.socket.destroy();
  });
});

describe("a declared length over the route's bound", () => {
  it("is 413 from the headers, before the credential; lingering (kept open) up to 64 MiB declared, closed beyond", async () => {
    const s = await serve();
    for (const [declared, closes] of [
      [1_500_000, false],
      [65 * 1024 * 1024, true],
    ] as const) {
      const c = await open(s.port, ATTACKER);
      c.socket.write(
        head("/v1/events/batch", { "Rendezvous-Producer": "acme/nobody", "Content-Length": String(declared) }),
      );
      await until(() => expect(status(c.data())).toBe(413));
      expect(c.data().toLowerCase().includes("connection: close")).toBe(closes);
      expect(s.budget.held).toBe(0);
      c.socket.destroy();
    }
  });
});

describe("the body budget", () => {
  const signedHeaders = (length: number | "chunked") => ({
    "Rendezvous-Producer": "acme/billing",
    "Rendezvous-Signature": sign("whsec_new", "not this body"),
    ...(length === "chunked" ? { "Transfer-Encoding": "chunked" } : { "Content-Length": String(length) }),
  });

  it("a declared length is reserved before it is read; past the client's share, 503 body_budget with Retry-After, the connection closed; another address still gets through; all is given back", async () => {
    const s = await serve();
    const holder = await open(s.port, ATTACKER);
    holder.socket.write(head("/v1/events/batch", signedHeaders(300_000)));
    holder.socket.write("x".repeat(1000));
    await until(() => expect(s.budget.heldBy(ATTACKER)).toBe(300_000));

    // the same address: over its share (400,000) with 200,000 more
    const second = await open(s.port, ATTACKER);
    second.socket.write(head("/v1/events/batch", signedHeaders(200_000)));
    await until(() => expect(status(second.data())).toBe(503));
    expect(second.data()).toMatch(/retry-after: 1\r\n/i);
    expect(second.data()).toContain('"reason":"body_budget"');
    expect(second.data()).toContain('"code":"unavailable"');
    await second.closed;

    // another address: 250,000 fits the process budget (600,000) beside the 300,000 held
    const body = paddedBatch("legit", 250_000);
    const legit = await open(s.port, LEGIT);
    legit.socket.write(
      head("/v1/events/batch", {
        "Rendezvous-Producer": "acme/billing",
        Authorization: "Bearer pk_billing",
        "Content-Length": String(body.length),
      }),
    );
    legit.socket.write(body);
    await until(() => expect(status(legit.data())).toBe(200));
    expect(legit.data()).toContain('"status":"accepted"');
    await until(() => expect(s.budget.heldBy(LEGIT)).toBe(0));

    // past the process budget: 300,000 held + 350,000 > 600,000, though within the share
    const third = await open(s.port, LEGIT);
    third.socket.write(head("/v1/events/batch", signedHeaders(350_000)));
    await until(() => expect(status(third.data())).toBe(503));

    // the holder gives up: what it held is given back
    holder.socket.destroy();
    legit.socket.destroy();
    await until(() => expect([s.budget.held, s.budget.clients]).toEqual([0, 0]));
  });

  it("a chunked body is counted as it arrives: past the share 503 body_budget mid-body, then all is given back", async () => {
    const s = await serve();
    const c = await open(s.port, ATTACKER);
    c.socket.write(head("/v1/events/batch", signedHeaders("chunked")));
    const piece = "y".repeat(16_384);
    let sent = 0;
    while (status(c.data()) === 0 && !c.isClosed() && sent < 2_000_000) {
      c.socket.write(`${piece.length.toString(16)}\r\n${piece}\r\n`);
      sent += piece.length;
      await new Promise((r) => setTimeout(r, 2));
    }
    await until(() => expect(status(c.data())).toBe(503));
    expect(c.data()).toContain('"reason":"body_budget"');
    expect(sent).toBeGreaterThanOrEqual(400_000);
    expect(sent).toBeLessThan(1_000_000);
    await c.closed;
    await until(() => expect([s.budget.held, s.budget.clients]).toEqual([0, 0]));
  });

  it("an aborted upload gives back what it held and is logged at debug, never as an error", async () => {
    const s = await serve();
    for (const length of [300_000, "chunked"] as const) {
      const c = await open(s.port, ATTACKER);
      c.socket.write(head("/v1/events/batch", signedHeaders(length)));
      c.socket.write(length === "chunked" ? `4000\r\n${"z".repeat(0x4000)}\r\n` : "z".repeat(0x4000));
      await until(() => expect(s.budget.held).toBeGreaterThan(0));
      c.socket.destroy();
      await until(() => expect(s.budget.held).toBe(0));
    }
    await until(() =>
      expect(s.logs.filter((l) => l.msg === "client aborted the request").map((l) => l.level)).toEqual([20, 20]),
    );
    expect(s.logs.filter((l) => l.level >= 40)).toEqual([]);
    // answered (to nobody) and counted as the client's fault: a bad body, not a 503
    const rejected = (await s.metrics.eventsRejected.get()).values.map((v) => [v.labels.reason, v.value]);
    expect(rejected).toEqual([["invalid_event", 2]]);
  });
});

describe("clientKey", () => {
  it("is the IPv4 address, or the /64 of an IPv6 address", () => {
    expect(clientKey("127.0.0.2")).toBe("127.0.0.2");
    expect(clientKey("::ffff:10.1.2.3")).toBe("10.1.2.3");
    expect(clientKey("2001:db8:0:1:aaaa::1")).toBe("2001:db8:0:1::/64");
    expect(clientKey("2001:DB8:0:1:bbbb:1:2:3")).toBe("2001:db8:0:1::/64");
    expect(clientKey("2001:db8::1")).toBe("2001:db8:0:0::/64");
    expect(clientKey("::1")).toBe("0:0:0:0::/64");
    expect(clientKey("fe80::1%eth0")).toBe("fe80:0:0:0::/64");
    expect(clientKey("1::2:3:4:5:1.2.3.4")).toBe("1:0:2:3::/64");
    expect(clientKey(undefined)).toBe("unknown");
  });

  it("a budget refuses past the process total or the client's share, and gives back exactly", () => {
    const b = new BodyBudget({ totalBytes: 100, perClientBytes: 60 });
    expect(b.take("a", 60)).toBe(true);
    expect(b.take("a", 1)).toBe(false);
    expect(b.take("b", 41)).toBe(false);
    expect(b.take("b", 40)).toBe(true);
    b.give("a", 60);
    b.give("b", 40);
    expect([b.held, b.clients]).toEqual([0, 0]);
  });
});
