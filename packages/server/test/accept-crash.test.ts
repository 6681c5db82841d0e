/**
 * Accept and match in one step (docs/architecture.md) under SIGKILL: `rendezvous start`
 * is killed while producers send events that its appends match, then started again on
 * the same Redis and prefix, and the producers send everything again (a producer retries
 * what was not answered). Every wait is resolved once by its event, its continuation
 * exists once with one `continuation_dispatched`, and the matches of the killed process
 * were counted by the accept path (rendezvous_accept_matches_total > 0 before the kill).
 */
import { redisUrl, spawnCli } from "@rendezvous/testkit";
import { Queue } from "bullmq";
import { Redis } from "ioredis";
import { afterEach, describe, expect, it } from "vitest";
import { bearer, client, LISTENING, producerKey, request, type Started, startServer, until } from "./e2e-helpers.js";

const HOST_KEY = "hk_acme_accept_crash";
const PRODUCER_KEY = "pk_billing_accept_crash";
const CONFIG = {
  partitions: 4,
  tenants: { acme: { hostKeys: [HOST_KEY], producers: { billing: { keys: [PRODUCER_KEY], eventTypes: ["*"] } } } },
};
const WAITS = 120;

describe("rendezvous start killed while its appends match", () => {
  const live: Array<{ terminate: () => Promise<unknown> }> = [];
  afterEach(async () => {
    for (const p of live.splice(0)) await p.terminate();
  });

  it("resolves each wait once and dispatches it once across the kill", async () => {
    const first: Started = await startServer({ config: CONFIG });
    live.push(first.proc);
    const host = client(first.url, bearer(HOST_KEY));
    const ids: string[] = [];
    for (let i = 0; i < WAITS; i++) {
      const reg = await host.post("/v1/waits", {
        runId: `run-${i}`,
        position: "p",
        eventType: "job.done",
        correlationId: `c-${i}`,
      });
      expect(reg.status).toBe(201);
      ids.push(reg.body.wait.id);
    }
    const event = (i: number) => ({ id: `evt-${i}`, type: "job.done", correlationId: `c-${i}` });

    // events 8 at a time until the kill; a request cut by it has no answer
    const producer = client(first.url, producerKey("acme/billing", PRODUCER_KEY));
    let sent = 0;
    const sending = (async () => {
      while (sent < WAITS) {
        const batch = Array.from({ length: Math.min(8, WAITS - sent) }, (_, j) => sent + j);
        sent += batch.length;
        const answers = await Promise.all(batch.map((i) => producer.post("/v1/events", event(i)).catch(() => null)));
        if (answers.some((a) => a === null)) return;
      }
    })();
    await until(async () => (sent >= WAITS / 3 ? true : undefined));
    const metrics = await request(first.url, "GET", "/metrics");
    const m = /^rendezvous_accept_matches_total(?:\{[^}]*\})? (\d+)/m.exec(metrics.text);
    expect(Number(m?.[1])).toBeGreaterThan(0);
    process.kill(first.proc.pid, "SIGKILL");
    await first.proc.exited;
    await sending;

    // the same Redis and prefix again; every event sent again
    const again = spawnCli(["start", "--config", first.configFile, "--redis-url", redisUrl(), "--port", "0"], {
      RENDEZVOUS_PREFIX: first.prefix,
    });
    live.push(again);
    const url = (await again.waitFor(LISTENING, 25_000))[1] as string;
    const producer2 = client(url, producerKey("acme/billing", PRODUCER_KEY));
    for (let i = 0; i < WAITS; i++) {
      const r = await producer2.post("/v1/events", event(i));
      expect([202, 200]).toContain(r.status);
    }
    const host2 = client(url, bearer(HOST_KEY));
    for (const [i, id] of ids.entries()) {
      const wait = await until(async () => {
        const w = (await host2.get(`/v1/waits/${id}`)).body.wait;
        return w?.history.some((h: { what: string }) => h.what === "continuation_dispatched") ? w : undefined;
      }, 20_000);
      expect(wait.state).toBe("resolved");
      expect(wait.resolution.event.id).toBe(`evt-${i}`);
      const count = (what: string) => wait.history.filter((h: { what: string }) => h.what === what).length;
      expect(count("resolved")).toBe(1);
      expect(count("continuation_dispatched")).toBe(1);
    }
    // one continuation job per wait (the job id is the wait id), none twice
    const connection = new Redis(redisUrl(), { maxRetriesPerRequest: null });
    const queue = new Queue("continuations.acme", { connection, prefix: first.prefix });
    try {
      expect(await queue.getJobCountByTypes("waiting", "active", "completed", "delayed", "failed")).toBe(WAITS);
    } finally {
      await queue.close();
      connection.disconnect();
    }
  }, 120_000);
});
