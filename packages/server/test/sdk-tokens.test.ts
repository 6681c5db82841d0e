/**
 * The SDK's completion tokens, outcomes and heartbeats against a real app and roles
 * (matcher, scheduler, dispatcher) on the run's private Redis: `registerWait({token})`,
 * `TokenClient.complete/fail/heartbeat`, `createToken`, `heartbeat`, `waitForResult`.
 */
import { HostClient, RendezvousApiError, resultOf, TokenClient } from "@rendezvous/client";
import { createResources, parseConfig } from "@rendezvous/engine";
import { buildApp } from "@rendezvous/http";
import { redisUrl, trackOpen, uniquePrefix } from "@rendezvous/testkit";
import { pino } from "pino";
import { describe, expect, it } from "vitest";
import { startRoles } from "../src/roles.js";

const HOST_KEY = "hk_sdk_tokens_key";

async function server() {
  const res = createResources({
    redisUrl: redisUrl(),
    prefix: uniquePrefix("sdkt"),
    config: parseConfig({ partitions: 4, tenants: { acme: { hostKeys: [HOST_KEY] } } }),
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
    host: new HostClient({ baseUrl: url, token: HOST_KEY }),
    tokens: new TokenClient({ baseUrl: url, retries: 0 }),
  };
}

const spec = (runId: string, extra: Record<string, unknown> = {}) => ({
  runId,
  position: "approve",
  eventType: "human.approval",
  correlationId: `c-${runId}`,
  ...extra,
});

describe("SDK: tokens, outcomes, heartbeats", () => {
  it("complete and fail through TokenClient; waitForResult discriminates, waitFor keeps its shape", async () => {
    const { host, tokens } = await server();
    const a = await host.registerWait(spec("run-a", { token: true, timeoutMs: 60_000 }));
    expect(a.token?.value).toBeTruthy();
    const again = await host.registerWait(spec("run-a", { token: true, timeoutMs: 60_000 }));
    expect(again.created).toBe(false);
    expect(again.token).toBeUndefined();
    expect(await tokens.complete(a.token?.value as string, { ok: true })).toEqual({
      waitId: a.wait.id,
      state: "resolved",
      outcome: "success",
    });
    const done = await host.waitForResult(spec("run-a", { token: true, timeoutMs: 60_000 }));
    expect(done).toMatchObject({ status: "success", payload: { ok: true } });

    const b = await host.registerWait(spec("run-b", { timeoutMs: 60_000 }));
    const issued = await host.createToken(b.wait.id);
    await tokens.fail(issued.value, { message: "declined", code: "E1" });
    const failed = await host.waitForResult(spec("run-b", { timeoutMs: 60_000 }));
    expect(failed).toMatchObject({ status: "failure", error: { message: "declined", code: "E1" } });
    // the payload shape of waitFor is unchanged (a failure carries no payload: {})
    expect(await host.waitFor(spec("run-b", { timeoutMs: 60_000 }))).toEqual({});
    const second = await tokens.complete(issued.value).catch((e: unknown) => e);
    expect(second).toBeInstanceOf(RendezvousApiError);
    expect((second as RendezvousApiError).code).toBe("not_waiting");
  });

  it("a timeout is a result, not a throw; heartbeats move it, and the scheduler follows the new deadline", async () => {
    const { host, tokens } = await server();
    const started = Date.now();
    const { wait, token } = await host.registerWait(spec("run-hb", { token: true, timeoutMs: 400, heartbeatMs: 1500 }));
    await new Promise((r) => setTimeout(r, 200));
    const beat = await tokens.heartbeat(token?.value as string);
    expect(Date.parse(beat.deadline)).toBeGreaterThan(Date.parse(wait.deadline as string));
    await new Promise((r) => setTimeout(r, 700)); // past the first deadline
    expect((await host.getWait(wait.id)).state).toBe("waiting");
    const byHost = await host.heartbeat(wait.id);
    expect(byHost.heartbeat?.count).toBe(2);
    const result = await host.waitForResult(spec("run-hb", { timeoutMs: 400, heartbeatMs: 1500 }));
    expect(result.status).toBe("timed_out");
    expect(result.wait.resolution?.deadline).toBe(byHost.deadline);
    expect(Date.now() - started).toBeGreaterThanOrEqual(Date.parse(byHost.deadline as string) - started);
    expect(resultOf(result.wait)?.status).toBe("timed_out");
  }, 15_000);
});
