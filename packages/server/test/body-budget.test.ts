/**
 * The body budget of a real `rendezvous api` process, set from the environment
 * (RENDEZVOUS_BODY_BUDGET_BYTES, RENDEZVOUS_BODY_BUDGET_PER_CLIENT_BYTES): one client
 * address past its share gets `503 body_budget` with Retry-After, another address is
 * served, the `rendezvous_http_body_bytes` gauge counts what is held and returns to 0,
 * and an aborted upload on a host route is no error in the log.
 */
import { createHmac } from "node:crypto";
import { connect, type Socket } from "node:net";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { parseEnv } from "../src/env.js";
import { type Started, startServer } from "./e2e-helpers.js";

const CONFIG = {
  partitions: 2,
  maxPayloadBytes: 2048, // the largest body is then the host routes' 1 MiB
  tenants: {
    acme: {
      hostKeys: ["hk_budget"],
      producers: { signer: { secrets: ["whsec_budget"], keys: ["pk_budget"], eventTypes: ["job.*"] } },
    },
  },
};
const SHARE = 1024 * 1024;

let server: Started;
let port: number;

beforeAll(async () => {
  server = await startServer({
    config: CONFIG,
    role: "api",
    env: { RENDEZVOUS_BODY_BUDGET_BYTES: String(2 * SHARE), RENDEZVOUS_BODY_BUDGET_PER_CLIENT_BYTES: String(SHARE) },
  });
  port = Number(new URL(server.url).port);
}, 60_000);

afterAll(async () => {
  if (server) expect((await server.proc.terminate()).code).toBe(0);
});

const until = (check: () => Promise<void> | void, ms = 10_000) => vi.waitFor(check, { timeout: ms, interval: 25 });

interface Conn {
  socket: Socket;
  data: () => string;
  closed: Promise<void>;
}

function open(localAddress: string): Promise<Conn> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: "127.0.0.1", port, localAddress });
    let data = "";
    socket.on("data", (d) => {
      data += d.toString();
    });
    socket.on("error", () => {});
    const closed = new Promise<void>((r) => socket.once("close", () => r()));
    socket.once("connect", () => resolve({ socket, data: () => data, closed }));
    socket.once("error", reject);
  });
}

/** Headers of a signed upload (the HMAC is of other bytes: it is refused once read). */
function signedUpload(path: string, length: number): string {
  const t = Math.floor(Date.now() / 1000);
  const v1 = createHmac("sha256", "whsec_budget").update(`${t}.`).digest("hex");
  return `POST ${path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nRendezvous-Producer: acme/signer\r\nRendezvous-Signature: t=${t},v1=${v1}\r\nContent-Length: ${length}\r\n\r\n`;
}

async function held(): Promise<number> {
  const res = await fetch(`${server.url}/metrics`);
  return Number(/^rendezvous_http_body_bytes (\d+)/m.exec(await res.text())?.[1] ?? Number.NaN);
}

describe("the body budget from the environment", () => {
  it("past a client's share: 503 body_budget with Retry-After and the connection closed; another address served; all given back", async () => {
    const holder = await open("127.0.0.2");
    holder.socket.write(signedUpload("/v1/events/batch", 900_000));
    holder.socket.write(" ".repeat(10_000));
    await until(async () => expect(await held()).toBeGreaterThanOrEqual(900_000));

    const over = await open("127.0.0.2");
    over.socket.write(signedUpload("/v1/events/batch", 200_000));
    await until(() => expect(over.data()).toMatch(/^HTTP\/1\.1 503 /));
    expect(over.data()).toMatch(/\r\nretry-after: 1\r\n/i);
    expect(over.data()).toContain('"code":"unavailable"');
    expect(over.data()).toContain('"reason":"body_budget"');
    await over.closed;

    // another address: its own share, within the process budget
    const body = JSON.stringify({ events: [{ id: "legit", type: "job.done", correlationId: "c" }] });
    const res = await fetch(`${server.url}/v1/events/batch`, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        "rendezvous-producer": "acme/signer",
        authorization: "Bearer pk_budget",
      },
      body: body + " ".repeat(800_000),
    });
    expect(res.status).toBe(200);
    expect(await res.text()).toContain('"status":"accepted"');

    holder.socket.destroy();
    await until(async () => expect(await held()).toBe(0));
  });

  it("an upload aborted on a host route is given back and logged as no error", async () => {
    const before = server.proc.output().length;
    const c = await open("127.0.0.2");
    c.socket.write(
      `POST /v1/waits HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer hk_budget\r\nContent-Type: application/json\r\nContent-Length: 500000\r\n\r\n{"runId":`,
    );
    await until(async () => expect(await held()).toBe(500_000));
    c.socket.destroy();
    await until(async () => expect(await held()).toBe(0));
    await new Promise((r) => setTimeout(r, 200));
    const log = server.proc.output().slice(before);
    expect(log).not.toMatch(/"level":50/);
    expect(log).not.toContain("unavailable");
  });

  it("a bad value stops startup naming the variable", () => {
    expect(() => parseEnv({ RENDEZVOUS_BODY_BUDGET_BYTES: "12" })).toThrow(/RENDEZVOUS_BODY_BUDGET_BYTES/);
    expect(() => parseEnv({ RENDEZVOUS_BODY_BUDGET_PER_CLIENT_BYTES: "x" })).toThrow(
      /RENDEZVOUS_BODY_BUDGET_PER_CLIENT_BYTES/,
    );
    expect(parseEnv({}).RENDEZVOUS_BODY_BUDGET_BYTES).toBe(64 * 1024 * 1024);
  });
});
