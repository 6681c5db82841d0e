/**
 * A sick Redis (docs/api.md, "Redis trouble"), against a real `rendezvous start` (every role in
 * one process) on a redis-server of the test's own:
 * - full (maxmemory reached, noeviction): every write route answers `503 unavailable` with
 *   `Retry-After` and `reason: "redis_oom"`, /readyz says 503, nothing is half-written, and
 *   once memory is raised /readyz is 200 and every refused request succeeds on retry;
 * - frozen (SIGSTOP for 20 s): host and producer requests are answered 503 within the
 *   command timeout (+1 s), /readyz says 503; after SIGCONT the roles work again, retries
 *   with the same ids converge, no wait is resolved twice, every accepted event is matched
 *   or buffered.
 */
import { createRedis, type RedisLike } from "@rendezvous/engine";
import { type RedisServer, startRedisServer } from "@rendezvous/testkit";
import { describe, expect, it } from "vitest";
import {
  bearer,
  type Client,
  client,
  expectError,
  type Json,
  producerKey,
  type Res,
  request,
  type Started,
  settled,
  sleep,
  startServer,
  until,
} from "./e2e-helpers.js";

const HOST_KEY = "hk_trouble";
const PRODUCER_KEY = "pk_trouble";
const CONFIG = {
  partitions: 4,
  adminToken: "adm_trouble",
  claimIdleMs: 1000,
  tenants: {
    acme: {
      hostKeys: [HOST_KEY],
      producers: { billing: { keys: [PRODUCER_KEY], eventTypes: ["*"] } },
    },
  },
};
/** RENDEZVOUS_REDIS_COMMAND_TIMEOUT_MS of the server under test */
const BOUND_MS = 2000;

interface World {
  redis: RedisServer;
  /** the test's own connection (no command timeout), never used while Redis is stopped */
  admin: RedisLike;
  server: Started;
  host: Client;
  producer: Client;
}

async function startWorld(): Promise<World> {
  const redis = await startRedisServer();
  const admin = createRedis(redis.url, { name: "test-admin" });
  let server: Started;
  try {
    server = await startServer({
      config: CONFIG,
      redis: redis.url,
      env: { RENDEZVOUS_REDIS_COMMAND_TIMEOUT_MS: String(BOUND_MS) },
    });
  } catch (err) {
    admin.disconnect();
    await redis.stop();
    throw err;
  }
  return {
    redis,
    admin,
    server,
    host: client(server.url, bearer(HOST_KEY)),
    producer: client(server.url, producerKey("acme/billing", PRODUCER_KEY)),
  };
}

async function stopWorld(w: World): Promise<void> {
  try {
    process.kill(w.redis.pid, "SIGCONT"); // never leave it stopped
  } catch {
    // already gone
  }
  const exit = await w.server.proc.terminate();
  w.admin.disconnect();
  await w.redis.stop();
  expect(exit.code).toBe(0);
}

const register = (host: Client, runId: string, correlationId: string, extra: Record<string, unknown> = {}) =>
  host.post("/v1/waits", { runId, position: "0", eventType: "job.done", correlationId, ...extra });
const event = (id: string, correlationId: string, type = "job.done") => ({ id, type, correlationId, payload: { id } });

/** A Redis-trouble answer: 503 `unavailable`, a `reason` among `reasons`, a `Retry-After`. */
function expectTrouble(res: Res, reasons: string[], what: string): void {
  const error = expectError(res, 503, "unavailable");
  expect(reasons, `${what}: reason ${error.reason}`).toContain(error.reason);
  expect(Number(res.headers.get("retry-after")), `${what}: Retry-After`).toBeGreaterThanOrEqual(1);
  expect(error.retryAfter).toBe(Number(res.headers.get("retry-after")));
}

/** How often a wait's history says it was resolved (timeouts and cancels included). */
const resolutions = (wait: Json): number => wait.history.filter((h: Json) => h.what === "resolved").length;

describe("a full Redis (maxmemory, noeviction)", () => {
  it("every write route answers 503 redis_oom with Retry-After, /readyz 503; raised memory: retries succeed, nothing half-written", async () => {
    const w = await startWorld();
    const { host, producer, admin } = w;
    try {
      // before: a waiting wait (patch, cancel), a resolved one (consume), one for deliver, one an event will match
      const wA = (await register(host, "oom-a", "a")).body.wait;
      const wB = (await register(host, "oom-b", "b")).body.wait;
      const wC = (
        await host.post("/v1/waits", { runId: "oom-c", position: "0", eventType: "job.deliver", correlationId: "c" })
      ).body.wait;
      const wD = (await register(host, "oom-d", "d")).body.wait;
      expect((await producer.post("/v1/events", event("before-b", "b"))).status).toBe(202);
      expect((await producer.post("/v1/events", event("before-x", "nobody"))).status).toBe(202);
      const batchBefore = await producer.post("/v1/events/batch", {
        events: [event("before-y", "nobody"), event("before-z", "nobody")],
      });
      expect(batchBefore.body.results.map((r: Json) => r.status)).toEqual(["accepted", "accepted"]);
      expect((await settled(host, wB.id)).state).toBe("resolved");
      const eventsBefore = ["before-b", "before-x", "before-y", "before-z"];
      const readEvents = async () =>
        Promise.all(eventsBefore.map(async (id) => (await host.get(`/v1/events/billing/${id}`)).body.event));
      const settledEvents = await until(async () => {
        const evs = await readEvents();
        return evs.every((e) => e.status !== "pending") ? evs : undefined;
      });
      const readWaits = async () =>
        Promise.all([wA, wB, wC, wD].map(async (x) => (await host.get(`/v1/waits/${x.id}`)).body.wait));
      const waitsBefore = await readWaits();
      expect((await request(w.server.url, "GET", "/readyz")).status).toBe(200);

      // fill Redis: maxmemory just above what it uses, then one write of ours takes it past
      const used = Number(/used_memory:(\d+)/.exec(await admin.info("memory"))?.[1]);
      await admin.config("SET", "maxmemory-policy", "noeviction");
      await admin.config("SET", "maxmemory", String(used + 1024 * 1024));
      let full = false;
      for (let i = 0; !full && i < 100; i++) {
        full = await admin.set(`filler:${i}`, "x".repeat(64 * 1024)).then(
          () => false,
          (err: Error) => /^OOM /.test(err.message),
        );
      }
      expect(full).toBe(true);
      // Full now, but only just: client buffers coming and going would flip it back and forth.
      // Pin the limit below what is used so it stays full for the test.
      const usedNow = Number(/used_memory:(\d+)/.exec(await admin.info("memory"))?.[1]);
      await admin.config("SET", "maxmemory", String(usedNow - 1024 * 1024));
      await expect(admin.set("filler:probe", "1")).rejects.toThrow(/^OOM /);

      const ready = await until(async () => {
        const r = await request(w.server.url, "GET", "/readyz");
        return r.status === 503 ? r : undefined;
      }, 5000);
      expect(ready.body.error).toMatchObject({ code: "unavailable", redis: false, reason: "redis_oom" });

      const refused: Array<[string, () => Promise<Res>]> = [
        ["POST /v1/waits", () => register(host, "oom-new", "n", { timeoutMs: 60_000 })],
        ["PATCH /v1/waits/:id", () => host.patch(`/v1/waits/${wA.id}`, { externalJobId: "job-1" })],
        ["DELETE /v1/waits/:id", () => host.delete(`/v1/waits/${wA.id}`)],
        ["POST /v1/waits/:id/consume", () => host.post(`/v1/waits/${wB.id}/consume`, { worker: "w1" })],
        ["POST /v1/deliver", () => host.post("/v1/deliver", { eventType: "job.deliver", correlationId: "c" })],
        ["POST /v1/events", () => producer.post("/v1/events", event("during-d", "d"))],
        [
          "POST /v1/events/batch",
          () => producer.post("/v1/events/batch", { events: [event("during-1", "nobody"), event("during-2", "d")] }),
        ],
      ];
      for (const [what, send] of refused) expectTrouble(await send(), ["redis_oom"], what);

      // reads still work, and show nothing of the refused requests
      expect(await readWaits()).toEqual(waitsBefore);
      expect((await host.get("/v1/waits?runId=oom-new")).body.waits).toEqual([]);
      for (const id of ["during-d", "during-1", "during-2"]) {
        expectError(await host.get(`/v1/events/billing/${id}`), 404, "not_found");
      }

      // memory raised: ready again, and every refused request succeeds as if it were the first
      await admin.config("SET", "maxmemory", "0");
      await until(async () => (await request(w.server.url, "GET", "/readyz")).status === 200, 5000);
      const retried = [];
      for (const [what, send] of refused) retried.push([what, await send()] as const);
      const statuses = Object.fromEntries(retried.map(([what, r]) => [what, r.status]));
      expect(statuses).toEqual({
        "POST /v1/waits": 201, // created now: the refused one stored nothing
        "PATCH /v1/waits/:id": 200,
        "DELETE /v1/waits/:id": 200,
        "POST /v1/waits/:id/consume": 200,
        "POST /v1/deliver": 200,
        "POST /v1/events": 202, // accepted now, not a duplicate
        "POST /v1/events/batch": 200,
      });
      const [, , , consume, deliver, , batch] = retried.map(([, r]) => r.body);
      expect(consume.first).toBe(true);
      expect(deliver.delivered).toEqual([wC.id]);
      expect(batch.results.map((r: Json) => r.status)).toEqual(["accepted", "accepted"]);
      expect((await settled(host, wD.id)).resolution.event.id).toBe("during-d");
      const patched = (await host.get(`/v1/waits/${wA.id}`)).body.wait;
      expect(patched).toMatchObject({ state: "cancelled", externalJobId: "job-1" });

      // everything accepted before is intact
      expect(await readEvents()).toEqual(settledEvents);
      for (const x of await readWaits()) expect(resolutions(x)).toBe(1);
    } finally {
      await stopWorld(w);
    }
  }, 60_000);
});

describe("a frozen Redis (SIGSTOP for 20 s)", () => {
  it("requests are answered 503 within the command timeout, /readyz 503; after SIGCONT retries converge, nothing applied twice", async () => {
    const w = await startWorld();
    const { host, producer } = w;
    const accepted = new Set<string>();
    const track = (id: string, r: Res) => {
      if (r.status === 202 || (r.status === 200 && r.body.status === "duplicate")) accepted.add(id);
    };
    try {
      const wM = (await register(host, "frz-m", "m")).body.wait;
      const wT = (await register(host, "frz-t", "t", { timeoutMs: 4000 })).body.wait; // its deadline passes while frozen
      const before = await producer.post("/v1/events", event("frz-before", "nobody"));
      track("frz-before", before);
      expect(before.status).toBe(202);

      // the requests a host and a producer keep sending, with the same ids each time
      const sends: Array<[string, () => Promise<Res>]> = [
        ["register", () => register(host, "frz-n", "n")],
        ["read", () => host.get(`/v1/waits/${wM.id}`)],
        ["patch", () => host.patch(`/v1/waits/${wM.id}`, { externalJobId: "job-m" })],
        ["list", () => host.get("/v1/waits?runId=frz-m")],
        ["event", () => producer.post("/v1/events", event("frz-m", "m"))],
        [
          "batch",
          () => producer.post("/v1/events/batch", { events: [event("frz-b1", "n"), event("frz-b2", "nobody")] }),
        ],
      ];
      const timed = async (send: () => Promise<Res>) => {
        const t = Date.now();
        const res = await send();
        return { res, ms: Date.now() - t };
      };

      process.kill(w.redis.pid, "SIGSTOP");
      const frozenAt = Date.now();
      const slowest: number[] = [];
      // three rounds spread over the freeze; each request answered within the bound
      for (const at of [0, 7000, 14_000]) {
        await sleep(Math.max(0, frozenAt + at - Date.now()));
        const [ready, ...answers] = await Promise.all([
          timed(() => request(w.server.url, "GET", "/readyz")),
          ...sends.map(([, send]) => timed(send)),
        ]);
        expect(ready?.res.status).toBe(503);
        expect(ready?.ms).toBeLessThanOrEqual(1500);
        answers.forEach(({ res, ms }, i) => {
          const what = `${sends[i]?.[0]} at +${at} ms`;
          expectTrouble(res, ["redis_timeout", "redis_down"], what);
          expect(ms, what).toBeLessThanOrEqual(BOUND_MS + 1000);
        });
        slowest.push(Math.max(...answers.map((a) => a.ms)));
      }
      console.info(`frozen Redis: slowest answer per round ${slowest.join(", ")} ms (bound ${BOUND_MS} ms)`);
      await sleep(Math.max(0, frozenAt + 20_000 - Date.now()));
      process.kill(w.redis.pid, "SIGCONT");

      await until(async () => (await request(w.server.url, "GET", "/readyz")).status === 200, 10_000);
      // The timed-out requests were not refused: their first step (claiming the event id, the
      // run position), already sent, ran when Redis woke. Other content under those ids is refused.
      expectError(
        await producer.post("/v1/events", { ...event("frz-m", "m"), payload: { other: true } }),
        409,
        "event_id_conflict",
      );
      expectError(await register(host, "frz-n", "other-correlation"), 409, "wait_conflict");
      // a one-script request (PATCH) that timed out was applied whole on wake-up
      const woke = (await host.get(`/v1/waits/${wM.id}`)).body.wait;
      expect(woke.externalJobId).toBe("job-m");
      // retried with the same ids: they converge (a timed-out script may have run on wake-up)
      const retried = await Promise.all(
        sends.map(([, send]) =>
          until(async () => {
            const r = await send();
            return r.status < 500 ? r : undefined;
          }, 10_000),
        ),
      );
      const at = (i: number) => retried[i] as Res;
      const again = { register: at(0), patch: at(2), event: at(4), batch: at(5) };
      const said = (r: Res) => `${r.status}${r.body.status ? ` ${r.body.status}` : ""}`;
      console.info(
        `after SIGCONT, retried: ${sends.map(([what], i) => `${what} ${said(retried[i] as Res)}`).join(", ")}`,
      );
      expect(again.register.status === 201 || again.register.status === 200).toBe(true);
      const wN = again.register.body.wait;
      const once = await register(host, "frz-n", "n");
      expect(once.status).toBe(200);
      expect(once.body.wait.id).toBe(wN.id);
      expect(again.patch.status).toBe(200);
      expect(again.patch.body.wait.externalJobId).toBe("job-m");
      track("frz-m", again.event);
      expect(again.event.body.event.id).toBe("frz-m");
      expect(again.batch.status).toBe(200);
      again.batch.body.results.forEach((r: Json, i: number) => {
        expect(["accepted", "duplicate"]).toContain(r.status);
        accepted.add(r.event.id);
        expect(r.event.id).toBe(["frz-b1", "frz-b2"][i]);
      });
      const dup = await producer.post("/v1/events", event("frz-m", "m"));
      expect(dup.status).toBe(200);
      expect(dup.body.status).toBe("duplicate");

      // the roles work again: matcher (frz-m resolves wM), scheduler (wT timed out), dispatcher (continuations)
      const m = await settled(host, wM.id);
      expect(m.resolution).toMatchObject({ kind: "event", event: { id: "frz-m" } });
      expect((await settled(host, wT.id)).state).toBe("timed_out");
      expect((await settled(host, wN.id)).resolution.event.id).toBe("frz-b1");
      const fresh = (await register(host, "frz-after", "after")).body.wait;
      const afterEvent = await producer.post("/v1/events", event("frz-after", "after"));
      track("frz-after", afterEvent);
      expect((await settled(host, fresh.id)).state).toBe("resolved");
      await until(async () => {
        const x = (await host.get(`/v1/waits/${fresh.id}`)).body.wait;
        return x.history.some((h: Json) => h.what === "continuation_dispatched");
      });

      // invariants: no wait resolved twice, every accepted event matched or buffered
      const all = (await host.get("/v1/waits?limit=500")).body.waits as Json[];
      expect(all.map((x) => x.runId).sort()).toEqual(["frz-after", "frz-m", "frz-n", "frz-t"]);
      for (const x of all) expect(resolutions(x), x.runId).toBe(1);
      expect([...accepted].sort()).toEqual(["frz-after", "frz-b1", "frz-b2", "frz-before", "frz-m"]);
      const statuses = await until(async () => {
        const evs = await Promise.all(
          [...accepted].sort().map(async (id) => (await host.get(`/v1/events/billing/${id}`)).body.event),
        );
        return evs.every((e) => e.status !== "pending") ? evs.map((e) => `${e.id}:${e.status}`) : undefined;
      });
      expect(statuses).toEqual([
        "frz-after:matched",
        "frz-b1:matched",
        "frz-b2:buffered",
        "frz-before:buffered",
        "frz-m:matched",
      ]);
    } finally {
      await stopWorld(w);
    }
  }, 60_000);
});
