/**
 * Bull Board on a Redis Cluster (project `cluster`): it must open the queues with
 * the hash-tagged queue prefix, or every page touching queue keys fails CROSSSLOT.
 */
import { createResources, parseConfig } from "@rendezvous/engine";
import { buildApp } from "@rendezvous/http";
import { redisUrl, trackOpen, uniquePrefix } from "@rendezvous/testkit";
import { pino } from "pino";
import { describe, expect, it } from "vitest";
import { startRoles } from "../src/roles.js";

const ADMIN = "adm_cluster_test_token";

describe("Bull Board on a Redis Cluster", () => {
  it("lists the queues with their job counts after a wait times out", async () => {
    const res = createResources({
      redisUrl: redisUrl(),
      prefix: uniquePrefix("bb"),
      config: parseConfig({ partitions: 4, adminToken: ADMIN, tenants: { acme: { hostKeys: ["hk_acme_bb"] } } }),
      logger: pino({ level: "silent" }),
    });
    const roles = await startRoles(res, ["scheduler", "dispatcher"]);
    const app = await buildApp({
      res,
      roles: ["api"],
      running: () => roles.running(),
      scheduleTimeout: (deadline) => roles.scheduler?.schedule([{ deadline }]) ?? Promise.resolve(),
      queueNames: ["timeouts", "webhooks", "continuations.acme"],
    });
    trackOpen({
      quit: async () => {
        await app.close();
        await roles.stop();
        await res.close();
      },
    });
    const { wait } = await res.store.register("acme", {
      runId: "r",
      position: "p",
      eventType: "job.done",
      correlationId: "c",
      timeoutMs: 100,
    });
    await roles.scheduler?.schedule([{ deadline: Date.parse(wait.deadline ?? "") }]);
    const until = Date.now() + 10_000;
    while ((await res.store.getWait("acme", wait.id))?.history.every((h) => h.what !== "continuation_dispatched")) {
      if (Date.now() > until) throw new Error("no continuation");
      await new Promise((r) => setTimeout(r, 50));
    }
    const reply = await app.inject({
      method: "GET",
      url: "/admin/queues/api/queues",
      headers: { authorization: `Bearer ${ADMIN}` },
    });
    expect(reply.statusCode).toBe(200);
    const body = reply.json() as { queues: Array<{ name: string; counts: Record<string, number> }> };
    const continuations = body.queues.find((q) => q.name === "continuations.acme");
    expect(continuations?.counts).toBeDefined();
    const total = Object.values(continuations?.counts ?? {}).reduce((a, b) => a + b, 0);
    expect(total).toBe(1);
  });
});
