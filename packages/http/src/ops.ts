/**
 * The operations routes every role serves: /healthz (process up), /readyz (Redis
 * takes writes, roles running), /metrics (Prometheus). No credentials.
 */

import { PartitionReader, type Resources } from "@rendezvous/engine";
import { errorResponses, RendezvousError } from "@rendezvous/protocol";
import type { FastifyInstance } from "fastify";
import { Gauge } from "prom-client";
import { z } from "zod";
import { RedisReadiness } from "./readiness.js";

export interface OpsOptions {
  res: Resources;
  /** are the process's roles running? */
  running: () => boolean;
  roles: string[];
}

const installed = new WeakSet<object>();

/** The command connection is up (else a command waits through the reconnection attempts). */
const connected = (res: Resources): boolean => res.redis.status === "ready";

/**
 * Gauges read from Redis at scrape time (pipelined over the partitions, per slot on a cluster): waits by
 * state (waiting / settled and still retained) and stream lag per partition.
 */
export function installStateGauges(res: Resources): void {
  const registry = res.metrics.registry;
  if (installed.has(registry)) return;
  installed.add(registry);
  const reader = new PartitionReader(res.store);
  new Gauge({
    name: "rendezvous_waits",
    help: "Waits by state: waiting, or settled and still retained",
    labelNames: ["state"],
    registers: [registry],
    async collect() {
      if (!connected(res)) return; // keep the last values rather than hang the scrape
      const { waiting, settled } = await reader.waitTotals();
      this.set({ state: "waiting" }, waiting);
      this.set({ state: "settled" }, settled);
    },
  });
  // one backlog read per scrape sets both gauges: the first registered collects for
  // both (prom-client collects and serialises metrics in registration order)
  new Gauge({
    name: "rendezvous_stream_lag",
    help: "Unprocessed stream entries per partition (undelivered + pending; an entry holds the events of one ingest call)",
    labelNames: ["partition"],
    registers: [registry],
    async collect() {
      if (!connected(res)) return; // keep the last values rather than hang the scrape
      for (const b of await reader.backlog()) {
        const partition = String(b.partition);
        this.set({ partition }, Math.max(0, b.undelivered) + b.pending);
        oldestAge.set({ partition }, (b.oldestUnprocessedAgeMs ?? 0) / 1000);
      }
    },
  });
  const oldestAge = new Gauge({
    name: "rendezvous_oldest_unprocessed_age_seconds",
    help: "Age of the oldest unprocessed event per partition",
    labelNames: ["partition"],
    registers: [registry],
  });
}

const Health = z.object({ status: z.literal("ok") }).meta({ id: "Health" });
const Readiness = z.object({ status: z.literal("ready"), roles: z.array(z.string()) }).meta({ id: "Readiness" });
/** No credentials (the document's default is the host key). */
const OPEN = { tags: ["operations"], security: [] };

export async function opsRoutes(app: FastifyInstance, opts: OpsOptions): Promise<void> {
  installStateGauges(opts.res);
  const health = { ...OPEN, operationId: "getHealth", summary: "The process is up", response: { 200: Health } };
  app.get("/healthz", { schema: health }, async () => ({ status: "ok" }));
  const readiness = new RedisReadiness(opts.res);
  const ready = {
    ...OPEN,
    operationId: "getReadiness",
    summary: "Redis takes writes and the roles run",
    response: { 200: Readiness, ...errorResponses(503) },
  };
  app.get("/readyz", { schema: ready }, async (_req, reply) => {
    const redis = await readiness.check();
    const running = opts.running();
    if (redis.ok && running) return { status: "ready", roles: opts.roles };
    const err = redis.ok
      ? new RendezvousError("unavailable", "roles not running", { redis: true, roles: running })
      : new RendezvousError("unavailable", "redis does not take writes", {
          redis: false,
          roles: running,
          reason: redis.reason,
        });
    return reply.code(503).send(err.toJSON());
  });
  const metrics = {
    ...OPEN,
    operationId: "getMetrics",
    summary: "Prometheus metrics (text exposition format)",
    produces: ["text/plain"],
    response: { 200: { description: "the metrics", content: { "text/plain": { schema: z.string() } } } },
  };
  app.get("/metrics", { schema: metrics }, async (_req, reply) => {
    reply.type(opts.res.metrics.registry.contentType);
    return opts.res.metrics.registry.metrics();
  });
}
