/**
 * The operations routes every role serves: /healthz (process up), /readyz (Redis
 * takes writes, roles running), /metrics (Prometheus). No credentials.
 */

import { type PartitionBacklog, PartitionReader, type Resources } from "@rendezvous/engine";
import { errorResponses, RendezvousError } from "@rendezvous/protocol";
import type { FastifyInstance } from "fastify";
import { collectDefaultMetrics, Gauge, type Registry } from "prom-client";
import { z } from "zod";
import { RedisReadiness } from "./readiness.js";

export interface OpsOptions {
  res: Resources;
  /** are the process's roles running? */
  running: () => boolean;
  roles: string[];
}

const installed = new WeakSet<object>();

/**
 * Tenants with their own `rendezvous_waits` series (the first of the registry, read at each
 * scrape; each costs 2 × partitions ZLEXCOUNTs per scrape); the waits of the others count
 * under `other`.
 */
export const WAIT_TENANT_SERIES = 100;
const OTHER_TENANTS = "other";

/** The command connection is up (else a command waits through the reconnection attempts). */
const connected = (res: Resources): boolean => res.redis.status === "ready";

/**
 * Gauges read from Redis at scrape time (pipelined over the partitions, per slot on a cluster): waits by
 * state (waiting / settled and still retained) and tenant, and stream lag per partition.
 */
export function installStateGauges(res: Resources): void {
  const registry = res.metrics.registry;
  if (installed.has(registry)) return;
  installed.add(registry);
  const reader = new PartitionReader(res.store);
  // the registry's tenants as they are at the scrape: one made through the admin API gets its series
  const seriesTenants = () => Object.keys(res.config.tenants).slice(0, WAIT_TENANT_SERIES);
  new Gauge({
    name: "rendezvous_waits",
    help: "Waits by state (waiting, or settled and still retained) and tenant",
    labelNames: ["state", "tenant"],
    registers: [registry],
    async collect() {
      if (!connected(res)) return; // keep the last values rather than hang the scrape
      // a failed per-tenant read keeps the last values (the totals count an unread partition 0)
      const [totals, perTenant] = await Promise.all([
        reader.waitTotals(),
        reader.countWaits(seriesTenants()).catch(() => null),
      ]);
      if (perTenant === null) return;
      this.reset(); // a tenant no longer among them leaves its series
      let waiting = totals.waiting;
      let settled = totals.settled;
      for (const c of perTenant) {
        this.set({ state: "waiting", tenant: c.tenant }, c.waiting);
        this.set({ state: "settled", tenant: c.tenant }, c.settled);
        waiting -= c.waiting;
        settled -= c.settled;
      }
      // tenants past the bound, and waits of tenants no longer configured
      this.set({ state: "waiting", tenant: OTHER_TENANTS }, Math.max(0, waiting));
      this.set({ state: "settled", tenant: OTHER_TENANTS }, Math.max(0, settled));
    },
  });
  // the counts of the tenants with a count quota among the first WAIT_TENANT_SERIES (docs/api.md, Quotas),
  // chosen at each scrape: a quota set through the admin API gets its series at the next one
  new Gauge({
    name: "rendezvous_quota_usage",
    help: "A tenant's count against its quotas (waitingWaits, bufferedEvents), as its counters hold it",
    labelNames: ["quota", "tenant"],
    registers: [registry],
    async collect() {
      if (!connected(res)) return; // keep the last values rather than hang the scrape
      const quotaTenants = res.store.quotas.counted(seriesTenants());
      const usage = await Promise.all(quotaTenants.map((t) => res.store.quotas.usage(t))).catch(() => null);
      if (usage === null) return;
      this.reset();
      usage.forEach((u, i) => {
        const tenant = quotaTenants[i] as string;
        this.set({ quota: "waitingWaits", tenant }, u.waitingWaits);
        this.set({ quota: "bufferedEvents", tenant }, u.bufferedEvents);
      });
    },
  });
  // one backlog read per scrape serves both gauges: prom-client starts the collects of a scrape
  // together, in registration order, so the second awaits the read the first started
  let backlog: Promise<PartitionBacklog[]> | null = null;
  new Gauge({
    name: "rendezvous_stream_lag",
    help: "Unprocessed stream entries per partition (undelivered + pending; an entry holds the events of one ingest call)",
    labelNames: ["partition"],
    registers: [registry],
    async collect() {
      if (!connected(res)) return; // keep the last values rather than hang the scrape
      const read = reader.backlog();
      backlog = read;
      for (const b of await read) this.set({ partition: String(b.partition) }, Math.max(0, b.undelivered) + b.pending);
    },
  });
  new Gauge({
    name: "rendezvous_oldest_unprocessed_age_seconds",
    help: "Age of the oldest unprocessed event per partition",
    labelNames: ["partition"],
    registers: [registry],
    async collect() {
      const read = backlog;
      backlog = null;
      if (!read) return; // keep the last values
      for (const b of await read) this.set({ partition: String(b.partition) }, (b.oldestUnprocessedAgeMs ?? 0) / 1000);
    },
  });
}

const processMetrics = new WeakSet<object>();

/**
 * prom-client's default metrics of the process (`process_*`, `nodejs_*`: CPU, memory, event
 * loop lag, GC, handles), labelled with the process's `role` (e.g. `api`, `matcher`,
 * `api+matcher+scheduler+dispatcher` for `start`). Once per registry.
 */
export function installProcessMetrics(registry: Registry, role: string): void {
  if (processMetrics.has(registry)) return;
  processMetrics.add(registry);
  collectDefaultMetrics({ register: registry, labels: { role } });
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
