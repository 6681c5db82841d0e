import { createServer } from "node:http";
import { eventually, makeResources } from "@rendezvous/testkit";
import { Queue } from "bullmq";
import { describe, expect, it } from "vitest";
import { continuationQueueName, Dispatcher, Matcher, signWebhook } from "../src/index.js";

const spec = (runId: string, correlationId: string, extra: Record<string, unknown> = {}) => ({
  runId,
  position: "step",
  eventType: "job.done",
  correlationId,
  ...extra,
});
const ev = (id: string, correlationId: string) => ({ id, type: "job.done", correlationId, payload: { id } });

describe("matcher + dispatcher", () => {
  it("resolves a wait from the stream and hands the continuation to BullMQ once", async () => {
    const res = makeResources();
    const matcher = new Matcher(res, { blockMs: 100 });
    const dispatcher = new Dispatcher(res, { blockMs: 100 });
    await matcher.start();
    await dispatcher.start();
    try {
      const { wait } = await res.store.register("acme", spec("run-1", "job-1"));
      await res.store.ingest("acme", "svc", [ev("e1", "job-1")]);
      const resolved = await eventually(async () => {
        const w = await res.store.getWait("acme", wait.id);
        return w?.history.some((h) => h.what === "continuation_dispatched") ? w : undefined;
      });
      expect(resolved.state).toBe("resolved");
      expect(resolved.resolution?.event?.id).toBe("e1");
      const queue = new Queue(continuationQueueName("acme"), { connection: res.connect("q"), prefix: res.queuePrefix });
      const job = await queue.getJob(wait.id);
      expect(job?.name).toBe("continuation");
      expect(job?.data.id).toBe(wait.id);
      expect(job?.data.state).toBe("resolved");
      expect(await queue.count()).toBe(1);
      await queue.close();
      // the stream entry and the outbox entry are acknowledged
      const k = res.store.keys.partition(res.store.keys.waitPartition(wait.id) as number);
      expect(((await res.redis.xpending(k.stream, "matchers")) as [number])[0]).toBe(0);
      await eventually(async () => ((await res.redis.xpending(k.outbox, "dispatchers")) as [number])[0] === 0);
    } finally {
      await matcher.stop();
      await dispatcher.stop();
    }
  });

  it("counts a count-N wait in rendezvous_resolutions_total once, when its Nth event resolves it", async () => {
    const res = makeResources();
    const matcher = new Matcher(res, { blockMs: 100 });
    await matcher.start();
    const resolutions = async () =>
      (await res.metrics.resolutions.get()).values.find((v) => v.labels.kind === "event" && v.labels.tenant === "acme")
        ?.value ?? 0;
    try {
      const { wait } = await res.store.register("acme", spec("run-1", "job-1", { count: 3 }));
      for (const id of ["e1", "e2", "e3"]) {
        await res.store.ingest("acme", "svc", [ev(id, "job-1")]);
        await eventually(async () => {
          const w = await res.store.getWait("acme", wait.id);
          return w && (w.collected?.length === (id === "e3" ? 0 : Number(id.slice(1))) || w.state !== "waiting");
        });
        // only collected (still waiting): not a resolution
        if (id !== "e3") expect(await resolutions()).toBe(0);
      }
      expect((await res.store.getWait("acme", wait.id))?.state).toBe("resolved");
      expect(await resolutions()).toBe(1);
    } finally {
      await matcher.stop();
    }
  });

  it("claims the pending entries of a dead matcher after claimIdleMs and trims processed entries", async () => {
    const res = makeResources({ partitions: 1 });
    const k = res.store.keys.partition(0);
    const { wait } = await res.store.register("acme", spec("run-1", "job-1"));
    await res.store.ingest("acme", "svc", [ev("e1", "job-1")]);
    // a "dead" matcher read the entry and never acknowledged it
    await res.redis.xgroup("CREATE", k.stream, "matchers", "0", "MKSTREAM");
    const read = await res.redis.xreadgroup("GROUP", "matchers", "dead-one", "COUNT", 10, "STREAMS", k.stream, ">");
    expect(read).not.toBeNull();
    const matcher = new Matcher(res, { blockMs: 100 });
    await matcher.start();
    try {
      const w = await eventually(async () => {
        const x = await res.store.getWait("acme", wait.id);
        return x?.state === "resolved" ? x : undefined;
      }, 5000);
      expect(w.resolution?.event?.id).toBe("e1");
      // the claimed entry is acknowledged after the match commits (the wait reads resolved first)
      await eventually(
        async () => (((await res.redis.xpending(k.stream, "matchers")) as [number])[0] === 0 ? true : undefined),
        5000,
      );
      await matcher.loop.trim();
      expect(await res.redis.xlen(k.stream)).toBe(0);
    } finally {
      await matcher.stop();
    }
  });

  it("sends a signed webhook with retries where the tenant has one", async () => {
    const received: Array<{ signature: string; body: string }> = [];
    let calls = 0;
    const server = createServer((req, reply) => {
      let body = "";
      req.on("data", (d) => {
        body += d;
      });
      req.on("end", () => {
        calls++;
        if (calls === 1) {
          reply.writeHead(503).end();
          return;
        }
        received.push({ signature: String(req.headers["rendezvous-signature"]), body });
        reply.writeHead(204).end();
      });
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
    const port = (server.address() as { port: number }).port;
    const secret = "whk_test_secret";
    const res = makeResources({
      tenants: { acme: { hostKeys: ["hk"], webhook: { url: `http://127.0.0.1:${port}/hook`, secret } } },
    });
    const matcher = new Matcher(res, { blockMs: 100 });
    const dispatcher = new Dispatcher(res, { blockMs: 100, webhookBackoffMs: 50 });
    await matcher.start();
    await dispatcher.start();
    try {
      const { wait } = await res.store.register("acme", spec("run-1", "job-1"));
      await res.store.ingest("acme", "svc", [ev("e1", "job-1")]);
      await eventually(async () => received.length > 0, 8000);
      const [first] = received;
      const t = Number(/t=(\d+)/.exec(first?.signature ?? "")?.[1]);
      expect(first?.signature).toBe(signWebhook(secret, first?.body ?? "", t));
      expect(JSON.parse(first?.body ?? "{}").wait.id).toBe(wait.id);
      expect(calls).toBe(2);
    } finally {
      await matcher.stop();
      await dispatcher.stop();
      await new Promise((r) => server.close(r));
    }
  });
});
