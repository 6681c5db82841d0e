/**
 * The chain in one process (docs/architecture.md): `rendezvous start` matches each event
 * in the append that accepted it (rendezvous_accept_matches_total) and adds the continuation
 * jobs of the waits it resolves in the same step (rendezvous_accept_continuations_total),
 * leaving the dispatcher nothing to hand out (rendezvous_outbox_handoffs_total), and does
 * none of it when a failpoint is armed, whose point stays where docs/api.md puts it; the
 * continuation is dispatched once either way.
 */
import { afterEach, describe, expect, it } from "vitest";
import { bearer, client, producerKey, request, type Started, startServer, until } from "./e2e-helpers.js";

const HOST_KEY = "hk_acme_handoff";
const PRODUCER_KEY = "pk_billing_handoff";
const CONFIG = {
  partitions: 4,
  tenants: { acme: { hostKeys: [HOST_KEY], producers: { billing: { keys: [PRODUCER_KEY], eventTypes: ["*"] } } } },
};

const counter = (text: string, name: string): number => {
  const m = new RegExp(`^${name}(?:\\{[^}]*\\})? (\\d+)`, "m").exec(text);
  expect(m, `${name} on /metrics`).not.toBeNull();
  return Number(m?.[1]);
};

/**
 * Resolves `n` waits through the API; the values of rendezvous_outbox_handoffs_total,
 * rendezvous_accept_matches_total and rendezvous_accept_continuations_total after.
 */
async function resolveAndCount(
  server: Started,
  n: number,
): Promise<{ handoffs: number; acceptMatches: number; acceptContinuations: number }> {
  const host = client(server.url, bearer(HOST_KEY));
  const producer = client(server.url, producerKey("acme/billing", PRODUCER_KEY));
  for (let i = 0; i < n; i++) {
    const reg = await host.post("/v1/waits", {
      runId: `run-${i}`,
      position: "p",
      eventType: "job.done",
      correlationId: `c-${i}`,
    });
    expect(reg.status).toBe(201);
    const pub = await producer.post("/v1/events", { id: `evt-${i}`, type: "job.done", correlationId: `c-${i}` });
    expect(pub.status).toBe(202);
    // dispatched: the timeline says so, once
    const wait = await until(async () => {
      const r = await host.get(`/v1/waits/${reg.body.wait.id}`);
      const w = r.body.wait;
      return w?.history.some((h: { what: string }) => h.what === "continuation_dispatched") ? w : undefined;
    });
    expect(wait.history.filter((h: { what: string }) => h.what === "continuation_dispatched")).toHaveLength(1);
  }
  const metrics = await request(server.url, "GET", "/metrics");
  return {
    handoffs: counter(metrics.text, "rendezvous_outbox_handoffs_total"),
    acceptMatches: counter(metrics.text, "rendezvous_accept_matches_total"),
    acceptContinuations: counter(metrics.text, "rendezvous_accept_continuations_total"),
  };
}

describe("rendezvous start: the match hands its resolutions to the dispatcher of its process", () => {
  let server: Started | undefined;
  afterEach(async () => {
    if (server) expect((await server.proc.terminate()).code).toBe(0);
    server = undefined;
  });

  it("matches each event in the append that accepted it and adds each resolution's job there", async () => {
    server = await startServer({ config: CONFIG });
    expect(await resolveAndCount(server, 3)).toEqual({ handoffs: 0, acceptMatches: 3, acceptContinuations: 3 });
  }, 60_000);

  it("leaves the match to the matcher and reads the outbox instead when a failpoint is armed", async () => {
    // (armed, never reached: no timeout fires in this test)
    server = await startServer({ config: CONFIG, env: { RENDEZVOUS_FAILPOINTS: "scheduler.after-timeout=crash" } });
    expect(await resolveAndCount(server, 2)).toEqual({ handoffs: 0, acceptMatches: 0, acceptContinuations: 0 });
  }, 60_000);
});
