/**
 * Hostile request bodies against a real `rendezvous api` process (issue #15, points 1
 * and 3): the attacker on 127.0.0.2, the legitimate host and producer on 127.0.0.1
 * sending throughout. Each case holds the harness's bounds (RSS growth ≤ 200 MiB, every
 * legitimate request 2xx within 2 s) and asserts what the attacker was answered.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Started, startServer } from "../e2e-helpers.js";
import { badSignature, deepBatch, uploadFlood } from "./bodies.attacks.js";
import { ATTACKER, expectAvailable, type LegitTraffic, send, underAttack } from "./harness.js";

const MAX_PAYLOAD = 65_536; // so a batch may be 500 × 64 KiB = 32 MiB
const MiB = 1024 * 1024;
const CONFIG = {
  partitions: 4,
  maxPayloadBytes: MAX_PAYLOAD,
  tenants: {
    acme: {
      hostKeys: ["hk_bodies"],
      producers: {
        billing: { keys: ["pk_bodies"], eventTypes: ["job.*"] },
        signer: { secrets: ["whsec_bodies"], eventTypes: ["job.*"] },
      },
    },
  },
};

let server: Started;
let port: number;
let legit: LegitTraffic;

beforeAll(async () => {
  server = await startServer({ config: CONFIG, role: "api" });
  port = Number(new URL(server.url).port);
  legit = {
    base: server.url,
    hostKey: "hk_bodies",
    producer: "acme/billing",
    producerKey: "pk_bodies",
    eventType: "job.done",
  };
}, 60_000);

afterAll(async () => {
  if (!server) return;
  expect((await server.proc.terminate()).code).toBe(0);
});

/** The body bytes the server holds now (its gauge on /metrics). */
async function heldBodyBytes(): Promise<number> {
  const metrics = await send(server.url, "GET", "/metrics");
  return Number(/^rendezvous_http_body_bytes (\d+)/m.exec(metrics.body)?.[1] ?? Number.NaN);
}

async function settledBodyBytes(): Promise<number> {
  const end = Date.now() + 5000;
  let held = await heldBodyBytes();
  while (held !== 0 && Date.now() < end) {
    await new Promise((r) => setTimeout(r, 50));
    held = await heldBodyBytes();
  }
  return held;
}

/** Runs `attack` while sampling the body bytes held; resolves with their peak. */
async function watchingHeld(attack: () => Promise<void>): Promise<number> {
  let peak = 0;
  const watch = setInterval(() => {
    void heldBodyBytes().then((b) => {
      peak = Math.max(peak, b || 0);
    });
  }, 100);
  try {
    await attack();
  } finally {
    clearInterval(watch);
  }
  return peak;
}

const tally = (answers: Array<{ status: number }>) => {
  const out: Record<number, number> = {};
  for (const a of answers) out[a.status] = (out[a.status] ?? 0) + 1;
  return out;
};

describe("hostile bodies", () => {
  it("100 wrong-key clients uploading 31 MiB batches (again and again): every one 401 from its headers, nothing buffered", async () => {
    let answers: Awaited<ReturnType<typeof uploadFlood>> = [];
    let peakHeld = -1;
    const report = await underAttack(server.proc.pid, legit, async () => {
      peakHeld = await watchingHeld(async () => {
        answers = await uploadFlood({
          port,
          clients: 100,
          bytes: 31 * MiB,
          path: "/v1/events/batch",
          headers: () => ({ "Rendezvous-Producer": "acme/billing", Authorization: "Bearer pk_wrong" }),
          framing: () => "content-length",
          bytesPerSecond: 4 * MiB,
          durationMs: 10_000,
          again: "always", // refused, it tries again half a second later
          pauseMs: 500,
        });
      });
    });
    const growth = (report.peakRss - report.baselineRss) / MiB;
    console.log(
      `wrong key ×100: ${JSON.stringify(tally(answers))}, RSS +${growth.toFixed(1)} MiB, legit p99 ${report.p99.toFixed(0)} ms over ${report.legit.length}`,
    );
    expect(answers.length).toBeGreaterThanOrEqual(100);
    expect(tally(answers)).toEqual({ 401: answers.length });
    for (const a of answers) {
      expect(a.body).toContain('"code":"unauthorized"');
      expect(a.closedByServer).toBe(true); // the 31 MiB it declared is not drained either
      expect(a.sent).toBeLessThan(31 * MiB);
    }
    // the legitimate producer's small bodies are all the server held
    expect(peakHeld).toBeLessThan(MiB);
    expectAvailable(report);
    expect(await settledBodyBytes()).toBe(0);
  }, 60_000);

  it("50 clients naming a valid producer with a bad signature uploading 8 MiB: the body budget holds them (401 or 503 with Retry-After)", async () => {
    let answers: Awaited<ReturnType<typeof uploadFlood>> = [];
    let peakHeld = 0;
    const report = await underAttack(server.proc.pid, legit, async () => {
      peakHeld = await watchingHeld(async () => {
        answers = await uploadFlood({
          port,
          clients: 50,
          bytes: 8 * MiB,
          path: "/v1/events/batch",
          headers: () => ({ "Rendezvous-Producer": "acme/signer", "Rendezvous-Signature": badSignature() }),
          framing: (i) => (i % 2 === 0 ? "content-length" : "chunked"),
          bytesPerSecond: 4 * MiB,
          durationMs: 15_000,
          again: "retry-after",
        });
      });
    });
    const growth = (report.peakRss - report.baselineRss) / MiB;
    console.log(
      `bad signature ×50: ${JSON.stringify(tally(answers))} over ${answers.length} uploads, peak held ${(peakHeld / MiB).toFixed(1)} MiB, RSS +${growth.toFixed(1)} MiB, legit p99 ${report.p99.toFixed(0)} ms over ${report.legit.length}`,
    );
    expect(answers.length).toBeGreaterThanOrEqual(50);
    for (const a of answers.filter((x) => x.status !== 0)) {
      expect([401, 503], a.body).toContain(a.status);
      if (a.status === 503) {
        expect(a.retryAfter).toBe("1");
        expect(a.body).toContain('"reason":"body_budget"');
      }
    }
    const t = tally(answers);
    expect(t[401] ?? 0, "some uploads were read whole and refused by their signature").toBeGreaterThan(0);
    expect(t[503] ?? 0, "the budget refused the rest").toBeGreaterThan(0);
    // only uploads abandoned at the attack's end go unanswered
    expect(t[0] ?? 0).toBeLessThanOrEqual(50);
    // one address holds at most its share, the largest batch (32 MiB), not 50 × 8 MiB
    // (the legitimate producer's small bodies beside it)
    expect(peakHeld).toBeLessThanOrEqual(33 * MiB);
    expectAvailable(report);
    expect(await settledBodyBytes()).toBe(0);
  }, 60_000);

  it("a batch with one event nested 5,000 deep: 200, that event rejected, the valid one stored", async () => {
    let answers: Awaited<ReturnType<typeof deepBatch>> = [];
    let hostBodies: number[] = [];
    const report = await underAttack(server.proc.pid, legit, async () => {
      answers = await deepBatch({ ...legit, rounds: 20, localAddress: ATTACKER });
      // the host routes' bodies: refused by depth before anything recursive sees them
      const deep = (n: number) => `${'{"a":'.repeat(n)}1${"}".repeat(n)}`;
      hostBodies = await Promise.all(
        [
          [
            "/v1/waits",
            `{"runId":"deep","position":"p","eventType":"job.done","correlationId":"d","metadata":${deep(5000)}}`,
          ],
          ["/v1/deliver", `{"eventType":"job.done","correlationId":"d","payload":${deep(5000)}}`],
        ].map(async ([path, body]) => {
          const res = await send(server.url, "POST", path as string, {
            headers: { authorization: "Bearer hk_bodies" },
            body,
            localAddress: ATTACKER,
          });
          expect(res.body).toContain('"code":"invalid_request"');
          return res.status;
        }),
      );
    });
    expect(answers.map((a) => [a.status, ...a.results])).toEqual(
      answers.map(() => [200, "rejected:invalid_event", "accepted"]),
    );
    expect(hostBodies).toEqual([400, 400]);
    for (const a of answers) {
      const read = await send(server.url, "GET", `/v1/events/billing/${a.validId}`, {
        headers: { authorization: "Bearer hk_bodies" },
      });
      expect(read.status).toBe(200);
    }
    expectAvailable(report);
  }, 60_000);
});
