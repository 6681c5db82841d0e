/**
 * The operations routes every role serves: /healthz (process up), /readyz (Redis
 * reachable, roles running), /metrics (Prometheus). No credentials.
 */
import { partitionBacklog, RendezvousError, type Resources } from "@rendezvous/core";
import type { FastifyInstance } from "fastify";
import { Gauge } from "prom-client";

export interface OpsOptions {
  res: Resources;
  /** are the process's roles running? */
  running: () => boolean;
  roles: string[];
}

const installed = new WeakSet<object>();

/**
 * Gauges read from Redis at scrape time (pipelined over the partitions): waits by
 * state (waiting / settled and still retained) and stream lag per partition.
 */
export function installStateGauges(res: Resources): void {
  const registry = res.metrics.registry;
  if (installed.has(registry)) return;
  installed.add(registry);
  const partitions = res.store.keys.allPartitions();
  new Gauge({
    name: "rendezvous_waits",
    help: "Waits by state: waiting, or settled and still retained",
    labelNames: ["state"],
    registers: [registry],
    async collect() {
      const pipeline = res.redis.pipeline();
      for (const p of partitions) {
        const k = res.store.keys.partition(p);
        pipeline.zcard(k.waiting);
        pipeline.zcard(k.done);
      }
      const results = (await pipeline.exec()) ?? [];
      let waiting = 0;
      let settled = 0;
      results.forEach(([, n], i) => {
        if (i % 2 === 0) waiting += Number(n ?? 0);
        else settled += Number(n ?? 0);
      });
      this.set({ state: "waiting" }, waiting);
      this.set({ state: "settled" }, settled);
    },
  });
  new Gauge({
    name: "rendezvous_stream_lag",
    help: "Unprocessed events per partition stream (undelivered + pending)",
    labelNames: ["partition"],
    registers: [registry],
    async collect() {
      for (const b of await partitionBacklog(res.store, partitions)) {
        this.set({ partition: String(b.partition) }, Math.max(0, b.undelivered) + b.pending);
      }
    },
  });
  new Gauge({
    name: "rendezvous_oldest_unprocessed_age_seconds",
    help: "Age of the oldest unprocessed event per partition",
    labelNames: ["partition"],
    registers: [registry],
    async collect() {
      for (const b of await partitionBacklog(res.store, partitions)) {
        this.set({ partition: String(b.partition) }, (b.oldestUnprocessedAgeMs ?? 0) / 1000);
      }
    },
  });
}

export async function opsRoutes(app: FastifyInstance, opts: OpsOptions): Promise<void> {
  installStateGauges(opts.res);
  app.get("/healthz", async () => ({ status: "ok" }));
  app.get("/readyz", async (_req, reply) => {
    let redis = false;
    try {
      redis = (await opts.res.redis.ping()) === "PONG";
    } catch {
      redis = false;
    }
    const running = opts.running();
    if (redis && running) return { status: "ready", roles: opts.roles };
    const err = new RendezvousError("unavailable", redis ? "roles not running" : "redis unreachable", {
      redis,
      roles: running,
    });
    return reply.code(err.statusCode).send(err.toJSON());
  });
  app.get("/metrics", async (_req, reply) => {
    reply.type(opts.res.metrics.registry.contentType);
    return opts.res.metrics.registry.metrics();
  });
}
