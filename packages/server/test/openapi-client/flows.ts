/**
 * A program written against a client generated from /openapi.json (openapi-typescript
 * types, openapi-fetch calls): packages/server/test/openapi.test.ts copies it beside the
 * generated `api.d.ts`, compiles it with strict `tsc`, runs it against a real server and
 * checks what it prints. It stays out of the workspace's own typecheck (its `./api.js`
 * exists only there).
 *
 * Every call is typed by the document: paths, path and query parameters, the
 * `Rendezvous-Producer` header, bodies, and the fields read from answers and errors.
 * The `@ts-expect-error` lines prove the types are not `any`: each is a mistake the
 * compiler must refuse (an unused `@ts-expect-error` fails the compile).
 */
import { createHmac } from "node:crypto";
import createClient from "openapi-fetch";
import type { components, paths } from "./api.js";

type Wait = components["schemas"]["Wait"];
type EventRecord = components["schemas"]["EventRecord"];

function env(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set`);
  return value;
}

const baseUrl = env("RDV_URL");
const producerId = env("RDV_PRODUCER"); // <tenant>/<producer>
const runId = env("RDV_RUN");
const host = createClient<paths>({ baseUrl, headers: { authorization: `Bearer ${env("RDV_HOST_KEY")}` } });
const producers = createClient<paths>({ baseUrl });
const asProducer = { header: { "Rendezvous-Producer": producerId } };

function sign(secret: string, raw: string): string {
  const t = Math.floor(Date.now() / 1000);
  return `t=${t},v1=${createHmac("sha256", secret).update(`${t}.${raw}`).digest("hex")}`;
}

// --- the producer flow: a bearer key, then an HMAC signature over the raw body
const byKey = await producers.POST("/v1/events", {
  params: asProducer,
  headers: { authorization: `Bearer ${env("RDV_PRODUCER_KEY")}` },
  body: { id: `${runId}-a`, type: "order.paid", correlationId: `${runId}-order-a`, payload: { amount: 5 } },
});
const byKeyEvent: EventRecord | undefined = byKey.data?.event;

const again = await producers.POST("/v1/events", {
  params: asProducer,
  headers: { authorization: `Bearer ${env("RDV_PRODUCER_KEY")}` },
  body: { id: `${runId}-a`, type: "order.paid", correlationId: `${runId}-order-a`, payload: { amount: 5 } },
});

const signedEvent = { id: `${runId}-b`, type: "order.paid", correlationId: `${runId}-order-b` };
const raw = JSON.stringify(signedEvent);
const bySignature = await producers.POST("/v1/events", {
  params: asProducer,
  headers: { "Rendezvous-Signature": sign(env("RDV_PRODUCER_SECRET"), raw) },
  body: signedEvent,
  // the signature covers these exact bytes
  bodySerializer: () => raw,
});

const refused = await producers.POST("/v1/events", {
  params: asProducer,
  headers: { authorization: "Bearer not-a-key" },
  body: { id: `${runId}-c`, type: "order.paid", correlationId: `${runId}-order-c` },
});

const batch = await producers.POST("/v1/events/batch", {
  params: asProducer,
  headers: { authorization: `Bearer ${env("RDV_PRODUCER_KEY")}` },
  body: {
    events: [
      { id: `${runId}-d`, type: "order.paid", correlationId: `${runId}-order-d` },
      { id: `${runId}-e`, type: "NOT A TYPE", correlationId: `${runId}-order-e` },
    ],
  },
});

const read = await host.GET("/v1/events/{producer}/{eventId}", {
  params: { path: { producer: producerId.split("/")[1] ?? "", eventId: `${runId}-b` } },
});

// --- the host flow: register, read, list, explain, deliver, consume
const registered = await host.POST("/v1/waits", {
  body: {
    runId,
    position: "approval",
    eventType: "order.approved",
    correlationId: `${runId}-approval`,
    timeoutMs: 60_000,
  },
});
const wait: Wait | undefined = registered.data?.wait;
const id = wait?.id ?? "missing";
const fetched = await host.GET("/v1/waits/{id}", { params: { path: { id } } });
const listed = await host.GET("/v1/waits", { params: { query: { runId, state: "waiting", limit: 10 } } });
const explained = await host.GET("/v1/waits/{id}/explain", { params: { path: { id } } });
const attached = await host.PATCH("/v1/waits/{id}", { params: { path: { id } }, body: { externalJobId: "job-1" } });
// `all` has a default: a generated client may leave it out
const delivered = await host.POST("/v1/deliver", {
  body: { eventType: "order.approved", correlationId: `${runId}-approval`, payload: { by: "alice" } },
});
const consumed = await host.POST("/v1/waits/{id}/consume", { params: { path: { id } }, body: { worker: "w1" } });
const consumedAgain = await host.POST("/v1/waits/{id}/consume", { params: { path: { id } }, body: { worker: "w2" } });
const cancelled = await host.DELETE("/v1/waits/{id}", { params: { path: { id } } });
const missing = await host.GET("/v1/waits/{id}", { params: { path: { id: "no-such-wait" } } });
const health = await host.GET("/healthz");

if (process.env.RDV_NEVER) {
  // @ts-expect-error a wait's runId is a string
  await host.POST("/v1/waits", { body: { runId: 1, position: "p", eventType: "t", correlationId: "c" } });
  // @ts-expect-error an event needs its id
  await producers.POST("/v1/events", { params: asProducer, body: { type: "t", correlationId: "c" } });
  // @ts-expect-error the producer routes need the Rendezvous-Producer header
  await producers.POST("/v1/events", { body: { id: "x", type: "t", correlationId: "c" } });
  // @ts-expect-error no such route
  await host.GET("/v1/nowhere");
  // @ts-expect-error a wait has no field `status`
  wait?.status;
}

console.log(
  JSON.stringify({
    producer: {
      byKey: {
        status: byKey.response.status,
        result: byKey.data?.status,
        id: byKeyEvent?.id,
        tenant: byKeyEvent?.tenant,
      },
      again: { status: again.response.status, result: again.data?.status },
      bySignature: {
        status: bySignature.response.status,
        result: bySignature.data?.status,
        streamId: bySignature.data?.event.streamId,
      },
      refused: { status: refused.response.status, code: refused.error?.error.code },
      batch: { status: batch.response.status, results: batch.data?.results.map((r) => r.status) },
      read: { status: read.response.status, id: read.data?.event.id, eventStatus: read.data?.event.status },
    },
    host: {
      registered: { status: registered.response.status, state: wait?.state, id },
      fetched: { status: fetched.response.status, runId: fetched.data?.wait.runId },
      listed: { status: listed.response.status, ids: listed.data?.waits.map((w) => w.id) },
      explained: { status: explained.response.status, verdict: explained.data?.verdict },
      attached: { status: attached.response.status, externalJobId: attached.data?.wait.externalJobId },
      delivered: {
        status: delivered.response.status,
        ids: delivered.data?.delivered,
        matched: delivered.data?.matched,
      },
      consumed: {
        status: consumed.response.status,
        first: consumed.data?.first,
        by: consumed.data?.consumption.by,
        kind: consumed.data?.wait.resolution?.kind,
      },
      consumedAgain: { status: consumedAgain.response.status, first: consumedAgain.data?.first },
      cancelled: { status: cancelled.response.status, code: cancelled.error?.error.code },
      missing: { status: missing.response.status, code: missing.error?.error.code },
      health: { status: health.response.status, body: health.data?.status },
    },
  }),
);
