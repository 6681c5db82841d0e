/**
 * Wait shapes end to end (docs/api.md, Wait shapes) against the real CLI (`rendezvous
 * start`, every role): any-of with failure types, count N with the real scheduler's
 * timeout, the 400s of a bad shape, and the SDK's `waitFor({ anyOf })` /
 * `waitForSettled({ count })`.
 */
import { HostClient } from "@rendezvous/client";
import { createRedis } from "@rendezvous/engine";
import { redisUrl, trackOpen } from "@rendezvous/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  bearer,
  type Client,
  client,
  expectError,
  expectWait,
  type Json,
  producerKey,
  type Started,
  settled,
  startServer,
} from "./e2e-helpers.js";

const HOST_KEY = "hk_acme_shapes";
const CONFIG = {
  partitions: 4,
  adminToken: "adm_e2e_shapes",
  tenants: {
    acme: {
      hostKeys: [HOST_KEY],
      producers: { svc: { keys: ["pk_svc_shapes"], eventTypes: ["*"] } },
    },
  },
};

let server: Started;
let host: Client;
let svc: Client;
let n = 0;
const uid = (label: string) => `${label}-${Date.now().toString(36)}-${++n}`;

beforeAll(async () => {
  server = await startServer({ config: CONFIG });
  host = client(server.url, bearer(HOST_KEY));
  svc = client(server.url, producerKey("acme/svc", "pk_svc_shapes"));
});

afterAll(async () => {
  if (server) expect((await server.proc.terminate()).code).toBe(0);
});

async function publish(type: string, correlationId: string, id = uid("ev")): Promise<Json> {
  const r = await svc.post("/v1/events", { id, type, correlationId, payload: { id } });
  expect(r.status, r.text).toBe(202);
  return r.body.event;
}

describe("wait shapes over HTTP", () => {
  it("a new deployment records its placement by correlation id", async () => {
    const redis = trackOpen(createRedis(redisUrl(), { name: "shapes-meta" }));
    expect(await redis.hget(`{${server.prefix}:meta}`, "placement")).toBe("correlation");
  });

  it("any-of with a failure type: the first event wins, says its type and outcome; the other is late", async () => {
    const corr = uid("charge");
    const r = await host.post("/v1/waits", {
      runId: uid("run"),
      position: "charge",
      eventTypes: ["payment.settled", "payment.failed"],
      failureTypes: ["payment.failed"],
      correlationId: corr,
      timeoutMs: 60_000,
    });
    expect(r.status, r.text).toBe(201);
    expectWait(r.body.wait);
    expect(r.body.wait).toMatchObject({
      eventType: "payment.settled",
      eventTypes: ["payment.settled", "payment.failed"],
      failureTypes: ["payment.failed"],
      count: 1,
      collected: [],
    });
    const failed = await publish("payment.failed", corr);
    const wait = await settled(host, r.body.wait.id);
    expect(wait.resolution).toMatchObject({ kind: "event", eventType: "payment.failed", outcome: "failure" });
    expect(wait.resolution.event.id).toBe(failed.id);
    const settledEv = await publish("payment.settled", corr);
    const after = await (async () => {
      for (let i = 0; i < 100; i++) {
        const w = (await host.get(`/v1/waits/${wait.id}`)).body.wait;
        if (w.lateEvents.length > 0) return w;
        await new Promise((res) => setTimeout(res, 50));
      }
      return null;
    })();
    expect(after?.lateEvents.map((e: Json) => e.id)).toEqual([settledEv.id]);
    expect(after?.state).toBe("resolved");
  });

  it("a bad shape is 400 invalid_request with issues, and stores nothing", async () => {
    const base = { runId: uid("run"), position: "p", correlationId: "c" };
    for (const [body, path] of [
      [{ ...base, eventType: "a.b", eventTypes: ["a.b"] }, "eventTypes"],
      [{ ...base }, "eventType"],
      [{ ...base, eventTypes: ["a.b", "a.b"] }, "eventTypes"],
      [{ ...base, eventTypes: [] }, "eventTypes"],
      [{ ...base, eventTypes: ["a.b", "c.d"], failureTypes: ["x.y"] }, "failureTypes"],
      [{ ...base, eventTypes: ["a.b", "c.d"], failureTypes: ["a.b", "c.d"] }, "failureTypes"],
      [{ ...base, eventType: "a.b", count: 0 }, "count"],
      [{ ...base, eventType: "a.b", count: 101 }, "count"],
    ] as const) {
      const res = await host.post("/v1/waits", body);
      const err = expectError(res, 400, "invalid_request");
      expect(
        err.issues.some((i: Json) => i.path.at(-1) === path),
        JSON.stringify(err.issues),
      ).toBe(true);
    }
    expect((await host.get(`/v1/waits?runId=${base.runId}`)).body.waits).toEqual([]);
  });

  it("count 2 times out through the real scheduler with the one event it collected", async () => {
    const corr = uid("rel");
    const r = await host.post("/v1/waits", {
      runId: uid("run"),
      position: "approvals",
      eventType: "approval.given",
      count: 2,
      correlationId: corr,
      timeoutMs: 1500,
    });
    expect(r.status, r.text).toBe(201);
    const one = await publish("approval.given", corr);
    const wait = await settled(host, r.body.wait.id);
    expect(wait.state).toBe("timed_out");
    expect(wait.collected.map((e: Json) => e.id)).toEqual([one.id]);
    expect(wait.resolution.events.map((e: Json) => e.type)).toEqual(["approval.given"]);
    const explained = await host.get(`/v1/waits/${wait.id}/explain`);
    expect(explained.body.verdict).toBe("timed_out");
  });

  it("the SDK: waitFor({ anyOf }) gives the winner's payload, waitForSettled({ count }) the N events", async () => {
    const sdk = new HostClient({ baseUrl: server.url, token: HOST_KEY, timeoutMs: 10_000 });
    const corr = uid("sdk");
    const pending = sdk.waitFor({
      runId: uid("run"),
      position: "p",
      anyOf: ["job.done", "job.failed"],
      correlationId: corr,
      pollMs: 50,
    });
    const ev = await publish("job.failed", corr);
    expect(await pending).toEqual({ id: ev.id });
    const corr3 = uid("sdk3");
    const three = sdk.waitForSettled({
      runId: uid("run"),
      position: "p",
      eventType: "vote",
      count: 3,
      correlationId: corr3,
      pollMs: 50,
    });
    const ids = [await publish("vote", corr3), await publish("vote", corr3), await publish("vote", corr3)].map(
      (e) => e.id,
    );
    const w = await three;
    expect(w.state).toBe("resolved");
    expect(w.resolution?.events?.map((e) => e.id)).toEqual(ids);
  });
});
