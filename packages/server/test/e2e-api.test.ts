/**
 * End to end, the whole docs/api.md surface over HTTP against the real CLI
 * (`rendezvous start --config F --redis-url R --port 0`, every role in one
 * process): events, batch, event reads, waits (register, read, list, patch,
 * cancel, explain, consume), direct delivery, continuations in BullMQ, the
 * operations routes, the OpenAPI document, and tenant isolation.
 */
import { createBlockingRedis, isClusterUrl, queuePrefixFor } from "@rendezvous/engine";
import { redisUrl } from "@rendezvous/testkit";
import { Queue } from "bullmq";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  bearer,
  type Client,
  client,
  expectError,
  expectTimes,
  expectWait,
  ISO_MS,
  type Json,
  producerKey,
  request,
  type Started,
  settled,
  sign,
  startServer,
  until,
} from "./e2e-helpers.js";

const ADMIN = "adm_e2e_api";
const CONFIG = {
  partitions: 4,
  adminToken: ADMIN,
  claimIdleMs: 1000,
  tenants: {
    acme: {
      hostKeys: ["hk_acme_e2e"],
      producers: {
        billing: {
          secrets: ["whsec_a", "whsec_b"],
          keys: ["pk_billing_e2e"],
          eventTypes: ["order.paid", "order.*", "job.done", "blip.once"],
        },
      },
    },
    beta: {
      hostKeys: ["hk_beta_e2e"],
      producers: { svc: { keys: ["pk_svc_e2e"], eventTypes: ["*"] } },
    },
  },
  eventTypes: {
    "order.paid": {
      payloadSchema: { type: "object", required: ["amount"], properties: { amount: { type: "number" } } },
    },
    "blip.once": { retentionMs: 1 },
  },
};

let server: Started;
let host: Client;
let beta: Client;
let admin: Client;
let billing: Client;
let svc: Client;
let n = 0;
/** a fresh id for this file's run */
const uid = (label: string) => `${label}-${Date.now().toString(36)}-${++n}`;

beforeAll(async () => {
  server = await startServer({ config: CONFIG });
  host = client(server.url, bearer("hk_acme_e2e"));
  beta = client(server.url, bearer("hk_beta_e2e"));
  admin = client(server.url, bearer(ADMIN));
  billing = client(server.url, producerKey("acme/billing", "pk_billing_e2e"));
  svc = client(server.url, producerKey("beta/svc", "pk_svc_e2e"));
});

afterAll(async () => {
  if (server) expect((await server.proc.terminate()).code).toBe(0);
});

async function register(c: Client, spec: Record<string, unknown>): Promise<Json> {
  const r = await c.post("/v1/waits", spec);
  expect(r.status, r.text).toBe(201);
  return r.body.wait;
}

async function publish(c: Client, event: Record<string, unknown>): Promise<Json> {
  const r = await c.post("/v1/events", event);
  expect(r.status, r.text).toBe(202);
  return r.body.event;
}

async function eventStatus(producer: string, id: string, status: string): Promise<Json> {
  return until(async () => {
    const r = await host.get(`/v1/events/${producer}/${encodeURIComponent(id)}`);
    return r.status === 200 && r.body.event.status === status ? r.body.event : undefined;
  });
}

describe("events (producers)", () => {
  it("202 accepted, 200 duplicate with the original, 409 event_id_conflict whatever the type; nothing stored on error", async () => {
    const id = uid("evt");
    const body = { id, type: "order.paid", correlationId: uid("o"), payload: { amount: 12.5 } };
    const first = await billing.post("/v1/events", body);
    expect(first.status).toBe(202);
    expect(first.body.status).toBe("accepted");
    const ev = first.body.event;
    expect(ev).toMatchObject({ id, producer: "billing", tenant: "acme", type: "order.paid" });
    expect(ev.correlationId).toBe(body.correlationId);
    expect(ev.acceptedAt).toMatch(ISO_MS);
    expect(typeof ev.streamId).toBe("string");
    expect(Date.parse(ev.acceptedAt)).toBe(Number(ev.streamId.split("-")[0]));

    const again = await billing.post("/v1/events", body);
    expect(again.status).toBe(200);
    expect(again.body.status).toBe("duplicate");
    expect(again.body.event).toMatchObject({ id, acceptedAt: ev.acceptedAt, streamId: ev.streamId });

    // other content under the same event key, also with another type or correlation id
    for (const other of [
      { ...body, payload: { amount: 13 } },
      { ...body, type: "order.shipped" },
      { ...body, correlationId: "another" },
      { id, type: "job.done", correlationId: "x" },
    ]) {
      expectError(await billing.post("/v1/events", other), 409, "event_id_conflict");
    }
    const read = await host.get(`/v1/events/billing/${id}`);
    expect(read.status).toBe(200);
    expect(read.body.event).toMatchObject({ id, type: "order.paid", streamId: ev.streamId, acceptedAt: ev.acceptedAt });
  });

  it("accepts HMAC signatures with any active secret, over the exact raw body", async () => {
    for (const secret of ["whsec_a", "whsec_b"]) {
      const raw = JSON.stringify({ id: uid("sig"), type: "job.done", correlationId: "c", payload: { s: secret } });
      const r = await request(server.url, "POST", "/v1/events", {
        raw,
        headers: {
          "content-type": "application/json",
          "rendezvous-producer": "acme/billing",
          "rendezvous-signature": sign(secret, raw),
        },
      });
      expect(r.status, r.text).toBe(202);
    }
  });

  it("batch: results in order, one bad event spoils nothing", async () => {
    const dupId = uid("dup");
    await publish(billing, { id: dupId, type: "job.done", correlationId: "b" });
    const ok1 = uid("b1");
    const ok2 = uid("b2");
    const bad = uid("bad");
    const r = await billing.post("/v1/events/batch", {
      events: [
        { id: ok1, type: "job.done", correlationId: "b" },
        { id: bad, type: "order.paid", correlationId: "b", payload: { amount: "ten" } },
        { id: dupId, type: "job.done", correlationId: "b" },
        { id: uid("forbidden"), type: "user.created", correlationId: "b" },
        { type: "job.done", correlationId: "no id" },
        { id: ok2, type: "order.paid", correlationId: "b", payload: { amount: 10 } },
      ],
    });
    expect(r.status, r.text).toBe(200);
    const results = r.body.results as Json[];
    expect(results.map((x) => x.status)).toEqual([
      "accepted",
      "rejected",
      "duplicate",
      "rejected",
      "rejected",
      "accepted",
    ]);
    expect(results[0].event.id).toBe(ok1);
    expect(results[1].error.code).toBe("invalid_event");
    expect(results[1].error.issues.length).toBeGreaterThan(0);
    expect(results[2].event.id).toBe(dupId);
    expect(results[3].error.code).toBe("forbidden_event_type");
    expect(results[4].error.code).toBe("invalid_event");
    expect(results[5].event.id).toBe(ok2);
    expectTimes(results);
    expect((await host.get(`/v1/events/billing/${ok1}`)).status).toBe(200);
    expect((await host.get(`/v1/events/billing/${ok2}`)).status).toBe(200);
    expectError(await host.get(`/v1/events/billing/${bad}`), 404, "not_found");
  });

  it("GET /v1/events/{producer}/{eventId}: host key, admin with ?tenant=, every field, statuses", async () => {
    const corr = uid("read");
    const id = uid("r");
    const accepted = await publish(billing, {
      id,
      type: "job.done",
      correlationId: corr,
      occurredAt: "2026-01-02T03:04:05.678Z",
    });
    const buffered = await eventStatus("billing", id, "buffered");
    for (const f of [
      "id",
      "producer",
      "type",
      "correlationId",
      "acceptedAt",
      "streamId",
      "status",
      "matchedWaits",
      "lateFor",
    ]) {
      expect(buffered, f).toHaveProperty(f);
    }
    expect(buffered).toMatchObject({
      id,
      producer: "billing",
      type: "job.done",
      correlationId: corr,
      acceptedAt: accepted.acceptedAt,
      streamId: accepted.streamId,
      matchedWaits: [],
      lateFor: [],
    });
    expectTimes(buffered);

    const viaAdmin = await admin.get(`/v1/events/billing/${id}?tenant=acme`);
    expect(viaAdmin.status).toBe(200);
    expect(viaAdmin.body.event).toMatchObject({ id, producer: "billing", streamId: accepted.streamId });
    expectError(await admin.get(`/v1/events/billing/${id}?tenant=beta`), 404, "not_found");
    expectError(await host.get(`/v1/events/billing/${uid("never")}`), 404, "not_found");
    expectError(await host.get(`/v1/events/nobody/${id}`), 404, "not_found");

    // matched: a wait registered now takes the buffered event; late: the next one arrives after
    const wait = await register(host, { runId: uid("run"), position: "p", eventType: "job.done", correlationId: corr });
    expect(wait.state).toBe("resolved");
    const matched = await eventStatus("billing", id, "matched");
    expect(matched.matchedWaits).toEqual([wait.id]);
    const lateId = uid("late");
    await publish(billing, { id: lateId, type: "job.done", correlationId: corr });
    const late = await eventStatus("billing", lateId, "late");
    expect(late.lateFor).toEqual([wait.id]);
    const w = (await host.get(`/v1/waits/${wait.id}`)).body.wait;
    expect(w.lateEvents).toEqual([expect.objectContaining({ producer: "billing", id: lateId })]);
    expect(w.history.map((h: Json) => h.what)).toContain("late_event");
    expectTimes(w);

    // expired: a buffered event past its type's retention
    const blip = uid("blip");
    await publish(billing, { id: blip, type: "blip.once", correlationId: uid("b") });
    expect((await eventStatus("billing", blip, "expired")).id).toBe(blip);
  });

  it("every time in an event answer is ISO-8601 UTC with milliseconds, also an occurredAt sent with an offset", async () => {
    const id = uid("tz");
    const sent = await billing.post("/v1/events", {
      id,
      type: "job.done",
      correlationId: uid("tz"),
      occurredAt: "2026-01-02T05:04:05+02:00",
    });
    expect(sent.status).toBe(202);
    expectTimes(sent.body);
    expect(sent.body.event.occurredAt).toBe("2026-01-02T03:04:05.000Z");
    const read = await host.get(`/v1/events/billing/${id}`);
    expectTimes(read.body);
  });

  it("event ids with URL-reserved characters read back", async () => {
    const id = `${uid("odd")}/with space?&#%`;
    await publish(billing, { id, type: "job.done", correlationId: "odd" });
    const r = await host.get(`/v1/events/billing/${encodeURIComponent(id)}`);
    expect(r.status, r.text).toBe(200);
    expect(r.body.event.id).toBe(id);
  });
});

describe("waits (hosts)", () => {
  it("201 new, 200 same definition (metadata and externalJobId aside), 409 wait_conflict otherwise", async () => {
    const spec = {
      runId: uid("run"),
      position: "charge#1",
      eventType: "order.paid",
      correlationId: uid("ord"),
      timeoutMs: 600_000,
      since: "2026-01-01T00:00:00.000Z",
      externalJobId: "job-1",
      metadata: { step: "charge" },
    };
    const created = await host.post("/v1/waits", spec);
    expect(created.status).toBe(201);
    const wait = created.body.wait;
    expectWait(wait);
    expect(wait).toMatchObject({
      tenant: "acme",
      runId: spec.runId,
      position: spec.position,
      eventType: spec.eventType,
      correlationId: spec.correlationId,
      state: "waiting",
      externalJobId: "job-1",
      metadata: { step: "charge" },
      resolution: null,
      consumption: null,
      lateEvents: [],
    });
    expect(Date.parse(wait.deadline) - Date.parse(wait.createdAt)).toBe(600_000);

    const same = await host.post("/v1/waits", { ...spec, metadata: { other: true }, externalJobId: "job-2" });
    expect(same.status).toBe(200);
    expect(same.body.wait.id).toBe(wait.id);
    expect(same.body.wait.createdAt).toBe(wait.createdAt);

    for (const change of [
      { correlationId: "other" },
      { eventType: "job.done" },
      { timeoutMs: 500_000 },
      { since: "2026-01-01T00:00:01.000Z" },
    ]) {
      const r = await host.post("/v1/waits", { ...spec, ...change });
      expectError(r, 409, "wait_conflict");
    }
    const read = await host.get(`/v1/waits/${wait.id}`);
    expect(read.status).toBe(200);
    expect(read.body.wait).toEqual(wait);
    const viaAdmin = await admin.get(`/v1/waits/${wait.id}`);
    expect(viaAdmin.status).toBe(200);
    expect(viaAdmin.body.wait.id).toBe(wait.id);
  });

  it("a buffered event resolves the new wait at once", async () => {
    const corr = uid("buf");
    const id = uid("e");
    await publish(billing, { id, type: "order.paid", correlationId: corr, payload: { amount: 7 } });
    await eventStatus("billing", id, "buffered");
    const r = await host.post("/v1/waits", {
      runId: uid("run"),
      position: "p",
      eventType: "order.paid",
      correlationId: corr,
    });
    expect(r.status).toBe(201);
    const w = r.body.wait;
    expectWait(w);
    expect(w.state).toBe("resolved");
    expect(w.resolution).toMatchObject({ kind: "event", event: { producer: "billing", id, payload: { amount: 7 } } });
    expect(w.resolution.at).toMatch(ISO_MS);
    expect(w.resolution.event.acceptedAt).toMatch(ISO_MS);
    expect(w.history.map((h: Json) => h.what)).toEqual(["registered", "resolved"]);
    expect(w.history[1]).toMatchObject({ kind: "event", event: { producer: "billing", id } });
  });

  it("an event resolves a waiting wait, the continuation job is in BullMQ, consume is first once", async () => {
    const corr = uid("flow");
    const wait = await register(host, {
      runId: uid("run"),
      position: "p",
      eventType: "order.paid",
      correlationId: corr,
      timeoutMs: 600_000,
    });
    expectError(await host.post(`/v1/waits/${wait.id}/consume`, { worker: "early" }), 409, "not_resolved");
    const id = uid("pay");
    await publish(billing, { id, type: "order.paid", correlationId: corr, payload: { amount: 99 } });
    const resolved = await settled(host, wait.id);
    expect(resolved.state).toBe("resolved");
    expect(resolved.resolution).toMatchObject({
      kind: "event",
      event: { producer: "billing", id, payload: { amount: 99 } },
    });

    // the queue as a host reads it: a cluster-aware connection and `{<prefix>}` on a cluster
    const connection = createBlockingRedis(redisUrl());
    const queue = new Queue("continuations.acme", {
      connection,
      prefix: queuePrefixFor(server.prefix, isClusterUrl(redisUrl())),
    });
    try {
      const job = await until(async () => (await queue.getJob(wait.id)) ?? undefined);
      expect(job.id).toBe(wait.id);
      expect(job.name).toBe("continuation");
      expect(job.data).toMatchObject({ id: wait.id, tenant: "acme", state: "resolved" });
      expect(job.data.resolution.event.id).toBe(id);
    } finally {
      await queue.close();
      connection.disconnect();
    }
    const dispatched = await until(async () => {
      const w = (await host.get(`/v1/waits/${wait.id}`)).body.wait;
      return w.history.some((h: Json) => h.what === "continuation_dispatched") ? w : undefined;
    });
    expect(dispatched.history.filter((h: Json) => h.what === "resolved")).toHaveLength(1);

    const claims = await Promise.all(
      ["w1", "w2", "w3", "w4", "w5"].map((worker) => host.post(`/v1/waits/${wait.id}/consume`, { worker })),
    );
    for (const c of claims) expect(c.status).toBe(200);
    const firsts = claims.filter((c) => c.body.first === true);
    expect(firsts).toHaveLength(1);
    const by = firsts[0]?.body.consumption.by;
    for (const c of claims) {
      expect(c.body.consumption.by).toBe(by);
      expect(c.body.consumption.at).toMatch(ISO_MS);
      expect(c.body.wait.id).toBe(wait.id);
      expect(c.body.wait.consumption).toEqual(c.body.consumption);
    }
    const later = await host.post(`/v1/waits/${wait.id}/consume`, { worker: "late" });
    expect(later.body).toMatchObject({ first: false, consumption: { by } });
    const final = (await host.get(`/v1/waits/${wait.id}`)).body.wait;
    expect(final.history.filter((h: Json) => h.what === "consumed")).toHaveLength(1);
  });

  it("PATCH attaches the external job id (job_attached); DELETE cancels, again is 409 not_waiting", async () => {
    const wait = await register(host, {
      runId: uid("run"),
      position: "p",
      eventType: "job.done",
      correlationId: uid("c"),
    });
    const patched = await host.patch(`/v1/waits/${wait.id}`, { externalJobId: "ext-42" });
    expect(patched.status).toBe(200);
    expect(patched.body.wait.externalJobId).toBe("ext-42");
    expect(patched.body.wait.history.map((h: Json) => h.what)).toContain("job_attached");
    expectTimes(patched.body.wait);

    const cancelled = await host.delete(`/v1/waits/${wait.id}`);
    expect(cancelled.status).toBe(200);
    expect(cancelled.body.wait.state).toBe("cancelled");
    expect(cancelled.body.wait.resolution).toMatchObject({ kind: "cancel" });
    expect(cancelled.body.wait.resolution.at).toMatch(ISO_MS);
    expectError(await host.delete(`/v1/waits/${wait.id}`), 409, "not_waiting");
    const consumed = await host.post(`/v1/waits/${wait.id}/consume`, { worker: "w" });
    expect(consumed.status).toBe(200);
    expect(consumed.body.first).toBe(true);
    expect((await host.get(`/v1/waits/${wait.id}/explain`)).body).toMatchObject({
      state: "cancelled",
      verdict: "cancelled",
    });
  });

  it("a timeout resolves the wait as timed_out; consume works on it; explain says timed_out", async () => {
    const wait = await register(host, {
      runId: uid("run"),
      position: "p",
      eventType: "job.done",
      correlationId: uid("t"),
      timeoutMs: 300,
    });
    const done = await settled(host, wait.id);
    expect(done.state).toBe("timed_out");
    expect(done.resolution).toMatchObject({ kind: "timeout" });
    expectTimes(done);
    expect((await host.get(`/v1/waits/${wait.id}/explain`)).body.verdict).toBe("timed_out");
    const c = await host.post(`/v1/waits/${wait.id}/consume`, { worker: "w" });
    expect(c.body.first).toBe(true);
  });

  it("a deadline (ISO) is kept to the millisecond", async () => {
    const deadline = new Date(Date.now() + 3_600_000).toISOString();
    const wait = await register(host, {
      runId: uid("run"),
      position: "p",
      eventType: "job.done",
      correlationId: uid("d"),
      deadline,
    });
    expect(wait.deadline).toBe(deadline);
  });

  it("GET /v1/waits filters by runId, state, eventType, correlationId and pages with nextCursor", async () => {
    const runId = uid("list");
    const corr = uid("lc");
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      const w = await register(host, {
        runId,
        position: `step-${i}`,
        eventType: i < 3 ? "job.done" : "order.shipped",
        correlationId: i === 0 ? corr : `${corr}-${i}`,
      });
      ids.push(w.id);
    }
    // beta's wait under the same run id is never listed for acme
    await register(beta, { runId, position: "step-0", eventType: "job.done", correlationId: corr });
    expect((await host.delete(`/v1/waits/${ids[4]}`)).status).toBe(200);

    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const q: string = `/v1/waits?runId=${runId}&limit=2${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`;
      const page = await host.get(q);
      expect(page.status, page.text).toBe(200);
      expect(page.body).toHaveProperty("nextCursor");
      expect(page.body.waits.length).toBeLessThanOrEqual(2);
      for (const w of page.body.waits) {
        expectWait(w);
        expect(w.tenant).toBe("acme");
        seen.push(w.id);
      }
      cursor = page.body.nextCursor;
      pages++;
    } while (cursor && pages < 10);
    expect(cursor).toBeNull();
    expect(pages).toBeGreaterThanOrEqual(3);
    expect([...seen].sort()).toEqual([...ids].sort());

    const ofRun = async (query: string) => {
      const r = await host.get(`/v1/waits?runId=${runId}&${query}`);
      expect(r.status, r.text).toBe(200);
      return (r.body.waits as Json[]).map((w) => w.id).sort();
    };
    expect(await ofRun("state=cancelled")).toEqual([ids[4]]);
    expect(await ofRun("state=waiting")).toEqual(ids.slice(0, 4).sort());
    expect(await ofRun("eventType=order.shipped")).toEqual([ids[3], ids[4]].sort());
    expect(await ofRun(`correlationId=${corr}`)).toEqual([ids[0]]);

    const byKey = await host.get(`/v1/waits?eventType=job.done&correlationId=${corr}`);
    expect(byKey.body.waits.map((w: Json) => w.id)).toEqual([ids[0]]);
    const byType = await host.get(`/v1/waits?eventType=order.shipped&state=waiting&limit=500`);
    expect(byType.body.waits.map((w: Json) => w.id)).toContain(ids[3]);
    expect(byType.body.waits.map((w: Json) => w.id)).not.toContain(ids[4]);
    const viaAdmin = await admin.get(`/v1/waits?tenant=acme&runId=${runId}&limit=500`);
    expect(viaAdmin.body.waits.map((w: Json) => w.id).sort()).toEqual([...ids].sort());
  });
});

describe("explain", () => {
  it("no_signal, correlation_mismatch, rejected_signal, then resolved", async () => {
    const corr = uid("ex");
    const type = `order.x${Date.now().toString(36)}${++n}`; // no other event of this type exists
    const wait = await register(host, {
      runId: uid("run"),
      position: "p",
      eventType: type,
      correlationId: corr,
      timeoutMs: 600_000,
    });
    const first = await host.get(`/v1/waits/${wait.id}/explain`);
    expect(first.status).toBe(200);
    expect(first.body).toMatchObject({ state: "waiting", verdict: "no_signal" });
    expect(typeof first.body.details).toBe("object");

    // an event of that type with another correlation id, buffered
    const near = uid("near");
    await publish(billing, { id: near, type, correlationId: `${corr}-other`, payload: { amount: 1 } });
    await eventStatus("billing", near, "buffered");
    const mismatch = await host.get(`/v1/waits/${wait.id}/explain`);
    expect(mismatch.body).toMatchObject({ state: "waiting", verdict: "correlation_mismatch" });
    expect(mismatch.body.details.nearMisses).toEqual([
      expect.objectContaining({ producer: "billing", id: near, correlationId: `${corr}-other` }),
    ]);

    // a matching event refused (its envelope is broken, its match key readable)
    const refused = await billing.post("/v1/events", {
      id: uid("refused"),
      type,
      correlationId: corr,
      occurredAt: "yesterday",
    });
    expectError(refused, 400, "invalid_event");
    const rejected = await host.get(`/v1/waits/${wait.id}/explain`);
    expect(rejected.body).toMatchObject({ state: "waiting", verdict: "rejected_signal" });
    expect(rejected.body.details.rejections).toEqual([
      expect.objectContaining({ producer: "billing", reason: "invalid_event" }),
    ]);
    expect((await host.get(`/v1/waits/${wait.id}`)).body.wait.state).toBe("waiting");

    // a payload refused by its type's schema is a rejected signal too (ahead of near misses)
    const paid = await register(host, {
      runId: uid("run"),
      position: "p",
      eventType: "order.paid",
      correlationId: corr,
    });
    expectError(
      await billing.post("/v1/events", { id: uid("nopay"), type: "order.paid", correlationId: corr }),
      400,
      "invalid_event",
    );
    expect((await host.get(`/v1/waits/${paid.id}/explain`)).body.verdict).toBe("rejected_signal");

    await publish(billing, { id: uid("ok"), type, correlationId: corr, payload: { amount: 2 } });
    await settled(host, wait.id);
    const resolved = await host.get(`/v1/waits/${wait.id}/explain`);
    expect(resolved.body).toMatchObject({ state: "resolved", verdict: "resolved" });
    expectTimes(resolved.body);
  });
});

describe("direct delivery", () => {
  it("ambiguous lists candidates and resolves nothing; correlationId narrows; all fans out; zero matches is 200", async () => {
    const type = `deliver.${Date.now().toString(36)}${++n}`;
    const a = await register(host, { runId: uid("run"), position: "a", eventType: type, correlationId: "c-a" });
    const b = await register(host, { runId: uid("run"), position: "b", eventType: type, correlationId: "c-b" });
    const c = await register(host, { runId: uid("run"), position: "c", eventType: type, correlationId: "c-b" });

    const amb = await host.post("/v1/deliver", { eventType: type });
    const err = expectError(amb, 409, "ambiguous");
    expect([...err.candidates].sort()).toEqual([a.id, b.id, c.id].sort());
    for (const w of [a, b, c]) expect((await host.get(`/v1/waits/${w.id}`)).body.wait.state).toBe("waiting");
    expectError(await host.post("/v1/deliver", { eventType: type, correlationId: "c-b" }), 409, "ambiguous");

    const one = await host.post("/v1/deliver", { eventType: type, correlationId: "c-a", payload: { ok: 1 } });
    expect(one.status).toBe(200);
    expect(one.body).toEqual({ delivered: [a.id], matched: 1 });
    const ra = (await host.get(`/v1/waits/${a.id}`)).body.wait;
    expect(ra.state).toBe("resolved");
    expect(ra.resolution.kind).toBe("deliver");
    expect(ra.resolution.at).toMatch(ISO_MS);

    const all = await host.post("/v1/deliver", { eventType: type, all: true });
    expect(all.status).toBe(200);
    expect([...all.body.delivered].sort()).toEqual([b.id, c.id].sort());
    expect(all.body.matched).toBe(2);
    for (const w of [b, c]) {
      expect((await host.get(`/v1/waits/${w.id}`)).body.wait.resolution.kind).toBe("deliver");
    }

    const none = await host.post("/v1/deliver", { eventType: type, correlationId: "nobody" });
    expect(none.status).toBe(200);
    expect(none.body).toEqual({ delivered: [], matched: 0 });
  });

  it("a wait past its deadline is not delivered to nor a candidate; it is left to its timeout", async () => {
    const type = `expired.${Date.now().toString(36)}${++n}`;
    const w = await register(host, {
      runId: uid("run"),
      position: "p",
      eventType: type,
      correlationId: "c",
      deadline: new Date(Date.now() + 150).toISOString(),
    });
    const fresh = await register(host, { runId: uid("run"), position: "p", eventType: type, correlationId: "c" });
    await new Promise((r) => setTimeout(r, 300));
    const r = await host.post("/v1/deliver", { eventType: type, correlationId: "c" });
    expect(r.status, r.text).toBe(200);
    expect(r.body).toEqual({ delivered: [fresh.id], matched: 1 });
    const final = await settled(host, w.id);
    expect(final.state).toBe("timed_out");
    expect(final.resolution.kind).toBe("timeout");
  });
});

describe("tenant isolation", () => {
  it("another tenant's wait ids and events answer 404 not_found; a producer cannot write into another tenant", async () => {
    const corr = uid("iso");
    const wa = await register(host, { runId: uid("run"), position: "p", eventType: "job.done", correlationId: corr });
    const wb = await register(beta, { runId: uid("run"), position: "p", eventType: "job.done", correlationId: corr });
    expect(wa.id).not.toBe(wb.id);
    expect(wb.tenant).toBe("beta");

    expectError(await beta.get(`/v1/waits/${wa.id}`), 404, "not_found");
    expectError(await beta.patch(`/v1/waits/${wa.id}`, { externalJobId: "x" }), 404, "not_found");
    expectError(await beta.delete(`/v1/waits/${wa.id}`), 404, "not_found");
    expectError(await beta.get(`/v1/waits/${wa.id}/explain`), 404, "not_found");
    expectError(await beta.post(`/v1/waits/${wa.id}/consume`, { worker: "x" }), 404, "not_found");
    expectError(await beta.get(`/v1/waits?tenant=acme`), 404, "not_found");
    const listed = await beta.get(`/v1/waits?eventType=job.done&correlationId=${corr}`);
    expect(listed.body.waits.map((w: Json) => w.id)).toEqual([wb.id]);
    // the same holds once acme's wait has settled
    await host.delete(`/v1/waits/${wa.id}`);
    expectError(await beta.post(`/v1/waits/${wa.id}/consume`, { worker: "x" }), 404, "not_found");
    expectError(await beta.get(`/v1/waits/${wa.id}`), 404, "not_found");
    expect((await host.get(`/v1/waits/${wa.id}`)).body.wait.consumption).toBeNull();

    // events: acme's event is invisible to beta, also by naming the tenant
    const eid = uid("iso-e");
    await publish(billing, { id: eid, type: "job.done", correlationId: corr });
    expectError(await beta.get(`/v1/events/billing/${eid}`), 404, "not_found");
    expectError(await beta.get(`/v1/events/billing/${eid}?tenant=acme`), 404, "not_found");
    expect((await host.get(`/v1/events/billing/${eid}`)).status).toBe(200);

    // acme's producer cannot write as beta's, with its key or a signature
    const raw = JSON.stringify({ id: uid("x"), type: "job.done", correlationId: corr });
    const forged: Array<Record<string, string>> = [
      { "rendezvous-producer": "beta/svc", authorization: "Bearer pk_billing_e2e" },
      { "rendezvous-producer": "beta/billing", authorization: "Bearer pk_billing_e2e" },
      { "rendezvous-producer": "beta/svc", "rendezvous-signature": sign("whsec_a", raw) },
    ];
    for (const headers of forged) {
      const r = await request(server.url, "POST", "/v1/events", {
        raw,
        headers: { ...headers, "content-type": "application/json" },
      });
      expectError(r, 401, "unauthorized");
    }
    // acme's event resolved nothing of beta's; beta's own producer does
    expect((await beta.get(`/v1/waits/${wb.id}`)).body.wait.state).toBe("waiting");
    await publish(svc, { id: uid("b"), type: "job.done", correlationId: corr });
    const rb = await settled(beta, wb.id);
    expect(rb.resolution.event.producer).toBe("svc");

    // delivery never crosses tenants
    const type = `iso.${Date.now().toString(36)}`;
    const da = await register(host, { runId: uid("run"), position: "p", eventType: type, correlationId: "k" });
    const none = await beta.post("/v1/deliver", { eventType: type, all: true });
    expect(none.body).toEqual({ delivered: [], matched: 0 });
    expect((await host.get(`/v1/waits/${da.id}`)).body.wait.state).toBe("waiting");
  });
});

describe("operations, Bull Board and OpenAPI", () => {
  it("/healthz, /readyz, /metrics need no credentials", async () => {
    const h = await request(server.url, "GET", "/healthz");
    expect(h.status).toBe(200);
    const r = await request(server.url, "GET", "/readyz");
    expect(r.status).toBe(200);
    const m = await request(server.url, "GET", "/metrics");
    expect(m.status).toBe(200);
    expect(m.headers.get("content-type")).toMatch(/^text\/plain/);
    const names = new Set(
      m.text
        .split("\n")
        .filter((l) => l.startsWith("# TYPE "))
        .map((l) => l.split(" ")[2] as string),
    );
    expect([...names].filter((x) => x.startsWith("rendezvous_")).length).toBeGreaterThan(3);
    expect(m.text).toMatch(/^rendezvous_events_accepted_total(\{[^}]*\})? \d+/m);
    for (const line of m.text.split("\n")) {
      if (line === "" || line.startsWith("#")) continue;
      expect(line).toMatch(/^[a-zA-Z_:][a-zA-Z0-9_:]*(\{.*\})? -?[0-9.e+-]+|NaN|[+-]Inf$/);
    }
  });

  it("/admin/queues: 401 without the admin token, 200 with it as Bearer or basic-auth password", async () => {
    expectError(await request(server.url, "GET", "/admin/queues"), 401, "unauthorized");
    expectError(
      await request(server.url, "GET", "/admin/queues", { headers: bearer("hk_acme_e2e") }),
      401,
      "unauthorized",
    );
    expectError(
      await request(server.url, "GET", "/admin/queues", { headers: bearer("adm_wrong") }),
      401,
      "unauthorized",
    );
    const basicWrong = `Basic ${Buffer.from("admin:nope").toString("base64")}`;
    expectError(
      await request(server.url, "GET", "/admin/queues", { headers: { authorization: basicWrong } }),
      401,
      "unauthorized",
    );
    const viaBearer = await request(server.url, "GET", "/admin/queues", { headers: bearer(ADMIN) });
    expect(viaBearer.status).toBe(200);
    expect(viaBearer.headers.get("content-type")).toMatch(/text\/html/);
    const basic = `Basic ${Buffer.from(`admin:${ADMIN}`).toString("base64")}`;
    const viaBasic = await request(server.url, "GET", "/admin/queues", { headers: { authorization: basic } });
    expect(viaBasic.status).toBe(200);
    const api = await request(server.url, "GET", "/admin/queues/api/queues", { headers: bearer(ADMIN) });
    expect(api.status).toBe(200);
    const queueNames = (api.body.queues as Json[]).map((q) => q.name);
    expect(queueNames).toEqual(expect.arrayContaining(["continuations.acme", "continuations.beta"]));
    expectError(await request(server.url, "GET", "/admin/queues/api/queues"), 401, "unauthorized");
  });

  it("/openapi.json is an OpenAPI 3 document listing every /v1 path of docs/api.md", async () => {
    const r = await request(server.url, "GET", "/openapi.json");
    expect(r.status).toBe(200);
    const doc = r.body;
    expect(typeof doc).toBe("object");
    expect(doc.openapi).toMatch(/^3\.\d+\.\d+$/);
    expect(typeof doc.info.title).toBe("string");
    expect(typeof doc.info.version).toBe("string");
    const expected: Array<[string, string]> = [
      ["post", "/v1/events"],
      ["post", "/v1/events/batch"],
      ["get", "/v1/events/{producer}/{eventId}"],
      ["post", "/v1/waits"],
      ["get", "/v1/waits"],
      ["get", "/v1/waits/{id}"],
      ["patch", "/v1/waits/{id}"],
      ["delete", "/v1/waits/{id}"],
      ["get", "/v1/waits/{id}/explain"],
      ["post", "/v1/waits/{id}/consume"],
      ["post", "/v1/deliver"],
    ];
    for (const [method, path] of expected) {
      expect(doc.paths[path]?.[method], `${method} ${path}`).toBeTypeOf("object");
    }
    // a wait's metadata is described as the JSON object it must be
    const bodyRef: string = doc.paths["/v1/waits"].post.requestBody.content["application/json"].schema.$ref;
    const waitBody = doc.components.schemas[bodyRef.split("/").pop() as string];
    expect(waitBody.properties.metadata).toMatchObject({ type: "object" });
    // every operation is well formed: responses, and each {param} of its path declared in: path, required
    for (const [path, item] of Object.entries(doc.paths as Record<string, Record<string, Json>>)) {
      expect(path.startsWith("/")).toBe(true);
      const templated = [...path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]);
      for (const p of templated) expect(p, path).toMatch(/^[A-Za-z_][A-Za-z0-9_]*$/);
      for (const [method, op] of Object.entries(item)) {
        expect(["get", "put", "post", "delete", "options", "head", "patch", "trace"]).toContain(method);
        expect(Object.keys(op.responses ?? {}).length, `${method} ${path}`).toBeGreaterThan(0);
        const declared = ((op.parameters ?? []) as Json[]).filter((x) => x.in === "path");
        expect(declared.map((x) => x.name).sort(), `${method} ${path}`).toEqual([...templated].sort());
        for (const d of declared) expect(d.required).toBe(true);
      }
    }
  });
});
