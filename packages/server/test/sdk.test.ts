import { type Continuation, ContinuationWorker, HostClient, ProducerClient } from "@rendezvous/client";
import { createResources, parseConfig } from "@rendezvous/engine";
import { buildApp } from "@rendezvous/http";
import { redisUrl, trackOpen, uniquePrefix } from "@rendezvous/testkit";
import { pino } from "pino";
import { describe, expect, it } from "vitest";
import { startRoles } from "../src/roles.js";

const HOST_KEY = "hk_sdk_test_key";
const SECRET = "whsec_sdk_test_secret";

async function server() {
  const res = createResources({
    redisUrl: redisUrl(),
    prefix: uniquePrefix("sdk"),
    config: parseConfig({
      partitions: 4,
      tenants: {
        acme: { hostKeys: [HOST_KEY], producers: { billing: { secrets: [SECRET], eventTypes: ["payment.*"] } } },
      },
    }),
    logger: pino({ level: "silent" }),
  });
  const roles = await startRoles(res, ["matcher", "scheduler", "dispatcher"]);
  const app = await buildApp({
    res,
    roles: ["api"],
    running: () => roles.running(),
    scheduleTimeout: (deadline) => roles.scheduler?.schedule([{ deadline }]) ?? Promise.resolve(),
  });
  const url = await app.listen({ host: "127.0.0.1", port: 0 });
  trackOpen({
    quit: async () => {
      await app.close();
      await roles.stop();
      await res.close();
    },
  });
  return {
    res,
    url,
    host: new HostClient({ baseUrl: url, token: HOST_KEY }),
    producer: new ProducerClient({ baseUrl: url, tenant: "acme", producer: "billing", secret: SECRET }),
  };
}

describe("host SDK", () => {
  it("ContinuationWorker runs the handler once per wait, with the payload, and not for a wait another worker claimed", async () => {
    const { res, host, producer } = await server();
    const seen: Continuation[] = [];
    const { wait: a } = await host.registerWait({
      runId: "r1",
      position: "p",
      eventType: "payment.settled",
      correlationId: "pay_1",
    });
    const { wait: b } = await host.registerWait({
      runId: "r2",
      position: "p",
      eventType: "payment.settled",
      correlationId: "pay_2",
    });
    // wait b: someone else claims it first (e.g. another runtime that polled), before this worker
    // runs: its job then reaches the worker already consumed by another
    await host.deliver({ eventType: "payment.settled", correlationId: "pay_2" });
    await host.consume(b.id, "someone-else");
    const worker = new ContinuationWorker({
      tenant: "acme",
      host,
      name: "w-1",
      connection: res.connect("continuations", { blocking: true }),
      prefix: res.queuePrefix,
      handler: async (c) => {
        seen.push(c);
      },
    });
    try {
      await producer.publish({ id: "e1", type: "payment.settled", correlationId: "pay_1", payload: { amount: 5 } });
      const until = Date.now() + 10_000;
      while (Date.now() < until) {
        const doneB = (await host.getWait(b.id)).history.some((h) => h.what === "continuation_dispatched");
        if (seen.length >= 1 && doneB) break;
        await new Promise((r) => setTimeout(r, 50));
      }
      await new Promise((r) => setTimeout(r, 300)); // b's job reaches the worker too; it must not run the handler
      expect(seen.map((c) => c.wait.id)).toEqual([a.id]);
      expect(seen[0]).toMatchObject({ payload: { amount: 5 }, timedOut: false, wait: { consumption: { by: "w-1" } } });
    } finally {
      await worker.close();
    }
  });

  it("waitFor resolves to the event's payload, or null when the deadline passes", async () => {
    const { host, producer } = await server();
    const pending = host.waitFor({
      runId: "r",
      position: "p",
      event: "payment.settled",
      correlationId: "pay_9",
      timeoutMs: 10_000,
      pollMs: 50,
    });
    setTimeout(
      () => void producer.publish({ id: "e9", type: "payment.settled", correlationId: "pay_9", payload: { ok: 1 } }),
      200,
    );
    expect(await pending).toEqual({ ok: 1 });
    expect(
      await host.waitFor({
        runId: "r",
        position: "q",
        event: "payment.settled",
        correlationId: "none",
        timeoutMs: 300,
        pollMs: 50,
      }),
    ).toBeNull();
  });

  it("launchAndWait registers first, launches once per idempotency key, and is safe to re-run after a crash", async () => {
    const { host } = await server();
    const jobs = new Map<string, string>(); // the external system: idempotent on the key
    const launches: string[] = [];
    const launch = async ({ idempotencyKey }: { idempotencyKey: string }) => {
      launches.push(idempotencyKey);
      if (!jobs.has(idempotencyKey)) jobs.set(idempotencyKey, `job-${jobs.size + 1}`);
      return jobs.get(idempotencyKey) as string;
    };
    const req = { runId: "r", position: "charge#1", eventType: "payment.settled", correlationId: "pay_7" };
    // crash after the launch, before the attach: the launch happened, the wait has no job id
    await expect(
      host.launchAndWait({
        ...req,
        launch: async (ctx) => {
          await launch(ctx);
          throw new Error("crash");
        },
      }),
    ).rejects.toThrow("crash");
    const first = await host.launchAndWait({ ...req, launch });
    expect(first.externalJobId).toBe("job-1");
    const again = await host.launchAndWait({ ...req, launch });
    expect(again.id).toBe(first.id);
    expect(launches).toEqual(["pay_7", "pay_7"]); // the re-run after the attach launched nothing
    expect(jobs.size).toBe(1);
    expect(again.history.filter((h) => h.what === "job_attached")).toHaveLength(1);
  });
});
