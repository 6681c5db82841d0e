/**
 * Hostile use of the token routes, which take no credential (docs/api.md, "Completion
 * tokens, failure and heartbeats"), against a real `rendezvous api` process: the attacker
 * on 127.0.0.2 guesses tokens with bodies near `maxPayloadBytes`, many at once, while the
 * legitimate host, producer and a token holder on 127.0.0.1 go on. The harness's bounds
 * hold (RSS growth ≤ 200 MiB, every legitimate request 2xx within 2 s); the attacker is
 * answered 404 token_invalid within its address's rate and 429 with Retry-After past it;
 * the holder's token completes its wait during the attack.
 */
import { Agent } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Started, startServer } from "../e2e-helpers.js";
import { type Answer, ATTACKER, expectAvailable, type LegitTraffic, send, underAttack } from "./harness.js";

const PER_ADDRESS = 50;
const CONFIG = {
  partitions: 4,
  maxPayloadBytes: 65_536,
  tokenRateLimitPerAddressPerSec: PER_ADDRESS,
  tenants: {
    acme: {
      hostKeys: ["hk_tokens_hostile"],
      producers: { billing: { keys: ["pk_tokens_hostile"], eventTypes: ["job.*"] } },
    },
  },
};

let server: Started;
let legit: LegitTraffic;

beforeAll(async () => {
  server = await startServer({ config: CONFIG, role: "api" });
  legit = {
    base: server.url,
    hostKey: "hk_tokens_hostile",
    producer: "acme/billing",
    producerKey: "pk_tokens_hostile",
    eventType: "job.done",
  };
}, 60_000);

afterAll(async () => {
  if (!server) return;
  expect((await server.proc.terminate()).code).toBe(0);
});

describe("hostile: the token routes", () => {
  it("a flood of guessed tokens with large bodies is rate limited; a real token holder is served", async () => {
    const host = { authorization: "Bearer hk_tokens_hostile" };
    const reg = await send(server.url, "POST", "/v1/waits", {
      headers: host,
      body: JSON.stringify({
        runId: "run-holder",
        position: "approve",
        eventType: "job.done",
        correlationId: "c-holder",
        timeoutMs: 60_000,
        token: true,
      }),
    });
    expect(reg.status).toBe(201);
    const token = JSON.parse(reg.body).token.value as string;
    const waitId = JSON.parse(reg.body).wait.id as string;

    const body = JSON.stringify({ payload: { pad: "x".repeat(60_000) } });
    const attacker: Answer[] = [];
    let holder: Answer | undefined;
    const report = await underAttack(server.proc.pid as number, legit, async () => {
      const agent = new Agent({ keepAlive: true, maxSockets: 32 });
      const until = Date.now() + 3000;
      const holderCall = (async () => {
        await new Promise((r) => setTimeout(r, 1500));
        holder = await send(server.url, "POST", `/v1/tokens/${encodeURIComponent(token)}/complete`, {
          body: JSON.stringify({ payload: { ok: true } }),
        });
      })();
      try {
        await Promise.all([
          holderCall,
          ...Array.from({ length: 32 }, async (_, lane) => {
            for (let n = 0; Date.now() < until; n++) {
              const guess = `rt1~w${lane % 4}.guess${n}~${"A".repeat(43)}`;
              attacker.push(
                await send(server.url, "POST", `/v1/tokens/${guess}/complete`, {
                  body,
                  localAddress: ATTACKER,
                  agent,
                }),
              );
            }
          }),
        ]);
      } finally {
        agent.destroy();
      }
    });
    expectAvailable(report);
    expect(holder?.status, holder?.body).toBe(200);
    const statuses = new Map<number, number>();
    for (const a of attacker) statuses.set(a.status, (statuses.get(a.status) ?? 0) + 1);
    // within the address's rate: token_invalid; past it: 429 (nothing else, no 5xx)
    expect([...statuses.keys()].sort(), JSON.stringify([...statuses])).toEqual([404, 429]);
    const ok404 = statuses.get(404) ?? 0;
    expect(ok404).toBeLessThanOrEqual(PER_ADDRESS * 5); // 3 s of attack, windows of one second
    const limited = attacker.find((a) => a.status === 429);
    expect(JSON.parse(limited?.body ?? "{}").error).toMatchObject({ code: "rate_limited", retryAfter: 1 });
    const wait = await send(server.url, "GET", `/v1/waits/${waitId}`, { headers: host });
    expect(JSON.parse(wait.body).wait.resolution).toMatchObject({ kind: "token", payload: { ok: true } });
  });
});
