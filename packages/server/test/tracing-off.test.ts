/**
 * Tracing off (no OTEL_* variables; docs/api.md, Tracing) against a real `rendezvous start`:
 * the process loads no SDK and records no span, yet a `traceparent` sent with an event is
 * kept as received and carried to the continuation (the HTTP lease and the BullMQ job's
 * telemetry metadata), so a tracing host continues the producer's trace; an event sent
 * without one stores nothing for it and its continuation carries none. The webhook POST
 * carries the context as headers.
 */
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { redisUrl } from "@rendezvous/testkit";
import { continuationQueueName } from "@rendezvous/workers";
import { Queue } from "bullmq";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bearer, client, producerKey, type Started, startServer, until } from "./e2e-helpers.js";

const CONFIG: { partitions: number; tenants: Record<string, unknown> } = {
  partitions: 2,
  tenants: {
    acme: {
      hostKeys: ["hk_acme_off"],
      producers: { billing: { keys: ["pk_billing_off"], eventTypes: ["order.*"] } },
    },
  },
};
const OFF = {
  OTEL_TRACES_EXPORTER: undefined,
  OTEL_EXPORTER_OTLP_ENDPOINT: undefined,
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: undefined,
};
const TP = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

/** every package module the server resolves is written here (module-log-hook.mjs) */
const moduleLog = join(mkdtempSync(join(tmpdir(), "trace-off-")), "modules.txt");
const hook = fileURLToPath(new URL("./module-log-hook.mjs", import.meta.url));

/** a tenant's webhook receiver: the headers of each POST */
const hooks: IncomingHttpHeaders[] = [];
let hookServer: Server;

let server: Started;
beforeAll(async () => {
  writeFileSync(moduleLog, "");
  hookServer = createServer((req, res) => {
    hooks.push(req.headers);
    req.resume();
    req.on("end", () => res.writeHead(200).end("{}"));
  });
  await new Promise<void>((resolve) => hookServer.listen(0, "127.0.0.1", resolve));
  const hookPort = (hookServer.address() as AddressInfo).port;
  CONFIG.tenants.hooked = {
    hostKeys: ["hk_hooked_off"],
    webhook: { url: `http://127.0.0.1:${hookPort}/continuations`, secret: "whk_off" },
    producers: { billing: { keys: ["pk_hooked_off"], eventTypes: ["order.*"] } },
  };
  server = await startServer({
    config: CONFIG,
    env: { ...OFF, NODE_OPTIONS: `--import=${hook}`, MODULE_LOG_FILE: moduleLog, MODULE_LOG_MATCH: "/node_modules/" },
  });
}, 40_000);
afterAll(async () => {
  await new Promise((resolve) => hookServer?.close(resolve));
  if (server) expect((await server.proc.terminate()).code).toBe(0);
});

const host = () => client(server.url, bearer("hk_acme_off"));
const producer = () => client(server.url, producerKey("acme/billing", "pk_billing_off"));

async function continuation(waitId: string) {
  const got = await until(async () => {
    const r = await host().post("/v1/continuations/claim", { worker: "w", waitMs: 2000 });
    return r.body.continuations.find((c: { waitId: string }) => c.waitId === waitId);
  });
  await host().post(`/v1/continuations/${got.leaseId}/ack`, {});
  return got as { traceparent?: string; tracestate?: string };
}

describe("tracing off", () => {
  it("keeps a traceparent as received and carries it to the lease and the BullMQ job", async () => {
    expect(server.proc.output()).not.toContain("tracing on");
    const w = await host().post("/v1/waits", {
      runId: "r-off-1",
      position: "p",
      eventType: "order.paid",
      correlationId: "o-off-1",
    });
    expect(w.status).toBe(201);
    const sent = await producer().post(
      "/v1/events",
      { id: "e-off-1", type: "order.paid", correlationId: "o-off-1" },
      { headers: { traceparent: TP, tracestate: "vendor=1" } },
    );
    expect(sent.status).toBe(202);

    // the BullMQ job carries it as bullmq-otel would read it
    const conn = new Redis(redisUrl(), { maxRetriesPerRequest: null });
    const queue = new Queue(continuationQueueName("acme"), { connection: conn, prefix: server.prefix });
    try {
      const job = await until(async () => (await queue.getJob(w.body.wait.id)) ?? undefined);
      expect(JSON.parse(job.opts.telemetry?.metadata ?? "null")).toEqual({ traceparent: TP, tracestate: "vendor=1" });
      expect(job.data.id).toBe(w.body.wait.id);
    } finally {
      await queue.close();
      conn.disconnect();
    }
    const lease = await continuation(w.body.wait.id);
    expect(lease.traceparent).toBe(TP);
    expect(lease.tracestate).toBe("vendor=1");

    // a re-send under another trace: still a duplicate
    const again = await producer().post(
      "/v1/events",
      { id: "e-off-1", type: "order.paid", correlationId: "o-off-1" },
      { headers: { traceparent: "00-11111111111111111111111111111111-2222222222222222-01" } },
    );
    expect(again.status).toBe(200);
    expect(again.body.status).toBe("duplicate");
  });

  it("loads no OpenTelemetry module at all", () => {
    // (after the events, leases and consumes above: every path has run)
    expect(server.proc.output()).toContain("listening on");
    const loaded = readFileSync(moduleLog, "utf8");
    expect(loaded).toContain("/node_modules/fastify/"); // the hook saw the server's modules
    expect(loaded).not.toContain("@opentelemetry");
  });

  it("without a traceparent (or with a malformed one) the continuation carries none", async () => {
    for (const [i, headers] of (
      [{}, { traceparent: "not-a-traceparent" }] as Array<Record<string, string>>
    ).entries()) {
      const w = await host().post("/v1/waits", {
        runId: `r-off-2-${i}`,
        position: "p",
        eventType: "order.paid",
        correlationId: `o-off-2-${i}`,
      });
      const sent = await producer().post(
        "/v1/events",
        { id: `e-off-2-${i}`, type: "order.paid", correlationId: `o-off-2-${i}` },
        { headers },
      );
      expect(sent.status).toBe(202);
      const lease = await continuation(w.body.wait.id);
      expect(lease).not.toHaveProperty("traceparent");
      expect(lease).not.toHaveProperty("tracestate");
    }
  });

  it("the webhook POST carries the continuation's traceparent and tracestate", async () => {
    const h = client(server.url, bearer("hk_hooked_off"));
    const w = await h.post("/v1/waits", {
      runId: "r-hook",
      position: "p",
      eventType: "order.paid",
      correlationId: "o-hook",
    });
    expect(w.status).toBe(201);
    const sent = await client(server.url, producerKey("hooked/billing", "pk_hooked_off")).post(
      "/v1/events",
      { id: "e-hook", type: "order.paid", correlationId: "o-hook" },
      { headers: { traceparent: TP, tracestate: "vendor=2" } },
    );
    expect(sent.status).toBe(202);
    const got = await until(async () => hooks.find((x) => x["rendezvous-delivery"] === `wh.${w.body.wait.id}`));
    expect(got.traceparent).toBe(TP);
    expect(got.tracestate).toBe("vendor=2");
    expect(got["rendezvous-signature"]).toMatch(/^t=\d+,v1=[0-9a-f]{64}$/);
  });
});
