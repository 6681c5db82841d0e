/**
 * Connection floods from 127.0.0.2 against a real `rendezvous api` process (issue #15, point 2):
 * 4,200 idle keep-alive sockets and 10,000 silent sockets, each held and topped up while
 * legitimate traffic from 127.0.0.1 (fresh connections) must stay 2xx within 2 s — the harness's
 * host and producer requests plus `/healthz`, `/readyz` and `/metrics` polled beside them — and
 * the server's RSS may grow by at most 200 MiB.
 *
 * Each flood runs twice: with the default limits (cap 4096, a quarter of it per address, 5 s
 * keep-alive), where the per-address limit holds the attacker to 1,024 connections; and with
 * the per-address limit above the attack size and the keep-alive timeout above the attack's
 * duration, so that the attacker fills the whole cap and closing the idlest connection first
 * is the only thing that lets legitimate clients in.
 */
import { Agent } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Started, startServer } from "../e2e-helpers.js";
import { type FloodReport, idleKeepAliveFlood, silentFlood } from "./connections.attacks.js";
import {
  type Answer,
  type AttackReport,
  expectAvailable,
  type LegitTraffic,
  MAX_LEGIT_MS,
  send,
  underAttack,
} from "./harness.js";

const CAP = 4096;
const DEFAULT_PER_ADDRESS = CAP / 4;
const HOLD_MS = 10_000;
const CONFIG = {
  partitions: 4,
  tenants: {
    acme: {
      hostKeys: ["hk_conn"],
      producers: { billing: { keys: ["pk_conn"], eventTypes: ["job.*"] } },
    },
  },
};

interface Probe {
  answers: Answer[];
  /** the most connections the server's gauge showed during the attack */
  maxOpen: number;
  /** connections the server closed during the attack, by reason (the counters' increase) */
  closed: Record<string, number>;
}

function metricsOf(text: string): { open: number; closed: Record<string, number> } {
  const open = Number(/^rendezvous_http_connections_open (\d+)/m.exec(text)?.[1] ?? 0);
  const closed: Record<string, number> = {};
  for (const m of text.matchAll(/^rendezvous_http_connections_closed_total\{reason="(\w+)"\} (\d+)/gm)) {
    closed[m[1] as string] = Number(m[2]);
  }
  return { open, closed };
}

/**
 * Runs `attack` under the harness while also polling `/healthz`, `/readyz` and `/metrics` from
 * 127.0.0.1 on fresh connections; returns the harness's report, the polls, and the attack's own.
 */
async function floodCase(
  server: Started,
  attack: () => Promise<FloodReport>,
): Promise<{ report: AttackReport; probe: Probe; flood: FloodReport }> {
  const legit: LegitTraffic = {
    base: server.url,
    hostKey: "hk_conn",
    producer: "acme/billing",
    producerKey: "pk_conn",
    eventType: "job.done",
  };
  const probe: Probe = { answers: [], maxOpen: 0, closed: {} };
  const closedBefore = metricsOf((await send(server.url, "GET", "/metrics")).body).closed;
  let flood: FloodReport | undefined;
  const report = await underAttack(server.proc.pid, legit, async () => {
    let attacking = true;
    const agent = new Agent({ keepAlive: false });
    const polling = (async () => {
      while (attacking) {
        for (const path of ["/healthz", "/readyz", "/metrics"]) {
          const a = await send(server.url, "GET", path, { agent });
          probe.answers.push(a);
          if (path === "/metrics" && a.status === 200) {
            const m = metricsOf(a.body);
            probe.maxOpen = Math.max(probe.maxOpen, m.open);
          }
        }
        await new Promise((r) => setTimeout(r, 50));
      }
    })();
    try {
      flood = await attack();
    } finally {
      attacking = false;
      await polling;
      agent.destroy();
    }
  });
  const closedAfter = metricsOf((await send(server.url, "GET", "/metrics")).body).closed;
  for (const [reason, n] of Object.entries(closedAfter)) probe.closed[reason] = n - (closedBefore[reason] ?? 0);
  const failed = probe.answers.filter((a) => a.status < 200 || a.status >= 300 || a.ms > MAX_LEGIT_MS);
  const sorted = probe.answers.map((a) => a.ms).sort((a, b) => a - b);
  console.log(
    `connections: flood ${JSON.stringify(flood)}; legit ${report.legit.length} requests, p99 ${report.p99.toFixed(0)} ms, ` +
      `${report.failures.length} failed; probes ${probe.answers.length}, max ${sorted.at(-1)?.toFixed(0)} ms, ` +
      `${failed.length} failed; server open max ${probe.maxOpen}; closed ${JSON.stringify(probe.closed)}; ` +
      `RSS +${((report.peakRss - report.baselineRss) / 2 ** 20).toFixed(1)} MiB`,
  );
  expectAvailable(report);
  expect(probe.answers.filter((a) => a.ms > 0).length, "health polls sent").toBeGreaterThan(3);
  expect(
    failed.slice(0, 5).map((a) => ({ status: a.status, ms: Math.round(a.ms), body: a.body.slice(0, 200) })),
    `${failed.length} of ${probe.answers.length} /healthz, /readyz, /metrics polls failed or took over ${MAX_LEGIT_MS} ms`,
  ).toEqual([]);
  return { report, probe, flood: flood as FloodReport };
}

function serverFor(env: Record<string, string>): { get: () => Started } {
  let server: Started | undefined;
  beforeAll(async () => {
    server = await startServer({ config: CONFIG, role: "api", env });
  }, 60_000);
  afterAll(async () => {
    if (server) expect((await server.proc.terminate()).code).toBe(0);
  });
  return { get: () => server as Started };
}

const portOf = (s: Started) => Number(new URL(s.url).port);

describe("connection floods, default limits (cap 4096, 1024 per address, 5 s keep-alive)", () => {
  const server = serverFor({});

  it("4,200 idle keep-alive sockets from one address: held to the per-address limit; legitimate traffic and health checks are served", async () => {
    const { probe, flood } = await floodCase(server.get(), () =>
      idleKeepAliveFlood(portOf(server.get()), { count: 4200, holdMs: HOLD_MS }),
    );
    expect(flood.answered).toBeGreaterThanOrEqual(DEFAULT_PER_ADDRESS);
    expect(probe.maxOpen).toBeLessThanOrEqual(DEFAULT_PER_ADDRESS + 20);
    expect(probe.closed.per_address_limit).toBeGreaterThan(0);
    // the 5 s keep-alive timeout closed the attacker's idle sockets while it held them
    expect(probe.closed.keep_alive_timeout).toBeGreaterThan(DEFAULT_PER_ADDRESS / 2);
  });

  it("10,000 silent sockets from one address: held to the per-address limit; legitimate traffic and health checks are served", async () => {
    const { probe, flood } = await floodCase(server.get(), () =>
      silentFlood(portOf(server.get()), { count: 10_000, holdMs: HOLD_MS }),
    );
    expect(flood.connected).toBeGreaterThanOrEqual(9500);
    expect(probe.maxOpen).toBeLessThanOrEqual(DEFAULT_PER_ADDRESS + 20);
    expect(probe.closed.per_address_limit).toBeGreaterThan(8000);
  });
});

describe("connection floods at the cap: per-address limit 20,000 and keep-alive 60 s, so closing the idlest first is what holds", () => {
  const server = serverFor({
    RENDEZVOUS_MAX_CONNECTIONS_PER_ADDRESS: "20000",
    RENDEZVOUS_KEEP_ALIVE_TIMEOUT_MS: "60000",
  });

  it("4,200 idle keep-alive sockets fill the cap: the idlest is closed for each newcomer; legitimate traffic and health checks are served", async () => {
    const { probe, flood } = await floodCase(server.get(), () =>
      idleKeepAliveFlood(portOf(server.get()), { count: 4200, holdMs: HOLD_MS }),
    );
    expect(flood.answered).toBeGreaterThanOrEqual(CAP);
    // the attacker held the whole cap, and every legitimate connection took an idle one's slot
    expect(probe.maxOpen).toBeGreaterThanOrEqual(CAP - 10);
    expect(probe.maxOpen).toBeLessThanOrEqual(CAP);
    // at least the attacker's own overflow was closed idlest first
    expect(probe.closed.idle_evicted).toBeGreaterThanOrEqual(4200 - CAP);
    expect(probe.closed.keep_alive_timeout ?? 0).toBe(0);
  });

  it("10,000 silent sockets fill the cap: the idlest is closed for each newcomer; legitimate traffic and health checks are served", async () => {
    const { probe, flood } = await floodCase(server.get(), () =>
      silentFlood(portOf(server.get()), { count: 10_000, holdMs: HOLD_MS }),
    );
    expect(flood.connected).toBeGreaterThanOrEqual(9500);
    expect(probe.maxOpen).toBeGreaterThanOrEqual(CAP - 10);
    expect(probe.maxOpen).toBeLessThanOrEqual(CAP);
    expect(probe.closed.idle_evicted).toBeGreaterThanOrEqual(10_000 - CAP);
  });
});
