/**
 * The operations routes every role serves: /healthz (process up), /readyz (Redis
 * reachable, roles running), /metrics (Prometheus). No credentials.
 */
import { RendezvousError, type Resources } from "@rendezvous/core";
import type { FastifyInstance } from "fastify";

export interface OpsOptions {
  res: Resources;
  /** are the process's roles running? */
  running: () => boolean;
  roles: string[];
}

export async function opsRoutes(app: FastifyInstance, opts: OpsOptions): Promise<void> {
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
