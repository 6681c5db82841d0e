/**
 * A compacted continuation job (docs/api.md, Continuations: the scheduler reduces a
 * completed job to a stub) as the console's job route and Bull Board read it: both answer,
 * with the job's state and timestamps, its data the stub.
 */
import { buildApp } from "@rendezvous/http";
import { eventually, makeResources } from "@rendezvous/testkit";
import { Dispatcher, Scheduler } from "@rendezvous/workers";
import { Queue, Worker } from "bullmq";
import { afterEach, describe, expect, it } from "vitest";
import { ensureConsoleBuilt } from "./console-browser.js";

const ADMIN = "adm_compacted";
const QUEUE = "continuations.acme";
const closers: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

describe("a compacted continuation job", () => {
  it("is read by the console's job route and listed by Bull Board", async () => {
    ensureConsoleBuilt();
    const res = makeResources({
      adminToken: ADMIN,
      tenants: { acme: { hostKeys: ["hk_compacted"] } },
      continuationCompactAfterMs: 0,
    });
    const app = await buildApp({ res, roles: ["api"], running: () => true, api: true, queueNames: [QUEUE] });
    const dispatcher = new Dispatcher(res, { blockMs: 100, webhookConcurrency: 0 });
    await dispatcher.start();
    const queue = new Queue(QUEUE, { connection: res.connect("q"), prefix: res.queuePrefix });
    closers.push(
      () => app.close(),
      () => dispatcher.stop(),
      () => queue.close(),
    );
    const { wait } = await res.store.register("acme", {
      runId: "r1",
      position: "p",
      eventType: "job.done",
      correlationId: "c1",
    });
    await res.store.deliver("acme", { eventType: "job.done", correlationId: "c1", payload: { ok: true } });
    const worker = new Worker(QUEUE, async (job) => void (await res.store.consume("acme", job.id as string, "h")), {
      connection: res.connect("w", { blocking: true }),
      prefix: res.queuePrefix,
    });
    closers.push(() => worker.close());
    await eventually(async () => (await queue.getCompletedCount()) === 1 || undefined);
    expect(await new Scheduler(res).compact()).toBe(1);
    expect(await res.redis.hget(`${res.queuePrefix}:${QUEUE}:${wait.id}`, "data")).toBe('{"compacted":true}');

    const headers = { authorization: `Bearer ${ADMIN}` };
    const job = await app.inject({ method: "GET", url: `/console/api/waits/${wait.id}/job`, headers });
    expect(job.statusCode).toBe(200);
    expect(job.json().job).toMatchObject({ state: "completed", attemptsMade: 1, failedReason: null });
    expect(job.json().job.finishedAt).toEqual(expect.any(String));

    const board = await app.inject({
      method: "GET",
      url: `/admin/queues/api/queues?activeQueue=${QUEUE}&status=completed&page=1`,
      headers,
    });
    expect(board.statusCode).toBe(200);
    const listed = (board.json().queues as Array<{ name: string; jobs: Array<{ id: string; data: unknown }> }>).find(
      (q) => q.name === QUEUE,
    );
    expect(listed?.jobs.map((j) => [j.id, j.data])).toEqual([[wait.id, { compacted: true }]]);

    // re-running it would hand the host the stub: the board hides it and its API refuses it
    expect(
      (board.json().queues as Array<{ name: string; allowCompletedRetries: boolean }>).find((q) => q.name === QUEUE)
        ?.allowCompletedRetries,
    ).toBe(false);
    for (const url of [
      `/admin/queues/api/queues/${QUEUE}/retry/completed`,
      `/admin/queues/api/queues/${encodeURIComponent(QUEUE)}/${wait.id}/retry`,
    ]) {
      const retry = await app.inject({ method: "PUT", url, headers });
      expect(retry.statusCode, url).toBe(409);
      expect(retry.json().error.code).toBe("retry_not_allowed");
    }
    expect(await queue.getCompletedCount()).toBe(1);
    expect(await queue.getWaitingCount()).toBe(0);
  });
});
