/**
 * The hostile-client harness: a real `rendezvous api` process, an attacker on another
 * loopback address (127.0.0.2, so a per-address limit is tested for what it is) and a
 * legitimate host and producer on 127.0.0.1 that keep sending during the attack.
 *
 * `underAttack` runs an attack while it samples the server's resident memory from
 * `/proc/<pid>/status` and times every legitimate request; `expectAvailable` asserts
 * the two bounds every case holds: RSS growth ≤ 200 MiB, each legitimate request
 * answered 2xx within 2 s. Those are availability bounds, not speed figures: the
 * benchmark (`npm run bench:hostile`) prints the legitimate p99 per case.
 */
import { appendFileSync, readFileSync } from "node:fs";
import { type Agent, Agent as HttpAgent, request as httpRequest } from "node:http";
import { connect, type Socket } from "node:net";
import { expect } from "vitest";

/** The legitimate clients' address; the attacker's is {@link ATTACKER}. */
export const LEGIT = "127.0.0.1";
export const ATTACKER = "127.0.0.2";
/** Most the server's RSS may grow during one attack. */
export const MAX_RSS_GROWTH = 200 * 1024 * 1024;
/** Most one legitimate request may take during an attack. */
export const MAX_LEGIT_MS = 2000;

/** Resident memory of a process, bytes. */
export function rssBytes(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const m = /^VmRSS:\s+(\d+) kB$/m.exec(status);
  if (!m) throw new Error(`no VmRSS for ${pid}`);
  return Number(m[1]) * 1024;
}

export interface Answer {
  status: number;
  body: string;
  ms: number;
}

/** One HTTP request from `localAddress`; resolves with status 0 on a socket error. */
export function send(
  base: string,
  method: string,
  path: string,
  opts: { headers?: Record<string, string>; body?: string | Buffer; localAddress?: string; agent?: Agent } = {},
): Promise<Answer> {
  const url = new URL(path, base);
  const started = performance.now();
  return new Promise((resolve) => {
    const req = httpRequest(
      {
        host: url.hostname,
        port: url.port,
        path: url.pathname + url.search,
        method,
        headers: {
          ...(opts.body !== undefined ? { "content-type": "application/json" } : {}),
          ...opts.headers,
        },
        localAddress: opts.localAddress ?? LEGIT,
        agent: opts.agent,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("end", () =>
          resolve({
            status: res.statusCode ?? 0,
            body: Buffer.concat(chunks).toString(),
            ms: performance.now() - started,
          }),
        );
        res.on("error", () => resolve({ status: 0, body: "", ms: performance.now() - started }));
      },
    );
    req.on("error", (err) => resolve({ status: 0, body: String(err), ms: performance.now() - started }));
    req.end(opts.body);
  });
}

/** A legitimate host and producer (their credentials, their payload) and what they send. */
export interface LegitTraffic {
  base: string;
  hostKey: string;
  producer: string;
  producerKey: string;
  eventType: string;
}

export interface AttackReport {
  baselineRss: number;
  peakRss: number;
  legit: Answer[];
  failures: Answer[];
  p99: number;
}

function p(sorted: number[], q: number): number {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] as number;
}

let sequence = 0;

/**
 * Legitimate traffic from {@link LEGIT} until `running()` turns false: in turn a wait
 * registration, a wait read, an event and `/healthz`, one at a time, each on a fresh
 * connection (a client that already holds a connection proves less).
 */
async function legitTraffic(legit: LegitTraffic, running: () => boolean): Promise<Answer[]> {
  const answers: Answer[] = [];
  const agent: Agent = new HttpAgent({ keepAlive: false });
  const host = { authorization: `Bearer ${legit.hostKey}` };
  const producer = { authorization: `Bearer ${legit.producerKey}`, "rendezvous-producer": legit.producer };
  const run = `legit-${process.pid}-${Date.now()}`;
  try {
    while (running()) {
      const n = sequence++;
      const reg = await send(legit.base, "POST", "/v1/waits", {
        headers: host,
        agent,
        body: JSON.stringify({ runId: run, position: `p${n}`, eventType: legit.eventType, correlationId: `c-${n}` }),
      });
      answers.push(reg);
      const id = /"id":"([^"]+)"/.exec(reg.body)?.[1];
      if (id) answers.push(await send(legit.base, "GET", `/v1/waits/${id}`, { headers: host, agent }));
      answers.push(
        await send(legit.base, "POST", "/v1/events", {
          headers: producer,
          agent,
          body: JSON.stringify({ id: `ev-${run}-${n}`, type: legit.eventType, correlationId: `c-${n}` }),
        }),
      );
      answers.push(await send(legit.base, "GET", "/healthz", { agent }));
      await new Promise((r) => setTimeout(r, 20));
    }
  } finally {
    agent.destroy();
  }
  return answers;
}

const p99Of = (answers: Answer[]): number =>
  p(
    answers.map((a) => a.ms).sort((a, b) => a - b),
    0.99,
  );

/** How long the same legitimate traffic runs without an attack, for the benchmark's comparison. */
const BASELINE_MS = 1500;

/**
 * Runs `attack` (it resolves when the attack is over) while sampling the server's RSS every
 * 50 ms and sending legitimate traffic. When `RENDEZVOUS_HOSTILE_REPORT` names a file (the
 * benchmark, `npm run bench:hostile`), the same traffic first runs for 1.5 s without the
 * attack, and one JSON line per case is appended there: the legitimate p99 unloaded and under
 * attack, the RSS growth. Tests assert bounds only, never those figures.
 */
export async function underAttack(
  pid: number,
  legit: LegitTraffic,
  attack: () => Promise<void>,
): Promise<AttackReport> {
  const reportFile = process.env.RENDEZVOUS_HOSTILE_REPORT;
  let baselineP99: number | undefined;
  if (reportFile) {
    const until = Date.now() + BASELINE_MS;
    baselineP99 = p99Of(await legitTraffic(legit, () => Date.now() < until));
  }
  const baselineRss = rssBytes(pid);
  let peakRss = baselineRss;
  const sampler = setInterval(() => {
    try {
      peakRss = Math.max(peakRss, rssBytes(pid));
    } catch {
      // the process is gone: the legitimate requests will say so
    }
  }, 50);
  let attacking = true;
  const traffic = legitTraffic(legit, () => attacking);
  try {
    await attack();
  } finally {
    attacking = false;
    await traffic;
    clearInterval(sampler);
  }
  const answers = await traffic;
  peakRss = Math.max(peakRss, rssBytes(pid));
  const failures = answers.filter((a) => a.status < 200 || a.status >= 300 || a.ms > MAX_LEGIT_MS);
  const report = { baselineRss, peakRss, legit: answers, failures, p99: p99Of(answers) };
  if (reportFile) {
    const line = {
      case: expect.getState().currentTestName ?? "?",
      requests: answers.length,
      failures: failures.length,
      baselineP99Ms: baselineP99,
      p99Ms: report.p99,
      rssGrowthMiB: (peakRss - baselineRss) / 2 ** 20,
    };
    appendFileSync(reportFile, `${JSON.stringify(line)}\n`);
  }
  return report;
}

/** The two bounds of every hostile case. */
export function expectAvailable(report: AttackReport): void {
  const growth = report.peakRss - report.baselineRss;
  expect(growth, `RSS grew ${(growth / 2 ** 20).toFixed(1)} MiB`).toBeLessThanOrEqual(MAX_RSS_GROWTH);
  expect(report.legit.length, "legitimate requests sent during the attack").toBeGreaterThan(3);
  expect(
    report.failures.slice(0, 5).map((f) => ({ status: f.status, ms: Math.round(f.ms), body: f.body.slice(0, 200) })),
    `${report.failures.length} of ${report.legit.length} legitimate requests failed or took over ${MAX_LEGIT_MS} ms`,
  ).toEqual([]);
}

/** A raw TCP connection from `localAddress` (the attacker's by default). */
export function rawSocket(port: number, localAddress = ATTACKER): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: LEGIT, port, localAddress });
    socket.once("connect", () => resolve(socket));
    socket.once("error", reject);
  });
}

/** Opens `count` raw connections from `localAddress`, `parallel` at a time; failed connects are skipped. */
export async function openSockets(
  port: number,
  count: number,
  localAddress = ATTACKER,
  parallel = 200,
): Promise<Socket[]> {
  const sockets: Socket[] = [];
  for (let i = 0; i < count; i += parallel) {
    const opened = await Promise.allSettled(
      Array.from({ length: Math.min(parallel, count - i) }, () => rawSocket(port, localAddress)),
    );
    for (const o of opened) {
      if (o.status === "fulfilled") {
        o.value.on("error", () => {});
        sockets.push(o.value);
      }
    }
  }
  return sockets;
}

export function destroyAll(sockets: Socket[]): void {
  // a reset leaves no TIME_WAIT on the attacker's ports (thousands of them slow every later connect)
  for (const s of sockets) s.resetAndDestroy();
}
