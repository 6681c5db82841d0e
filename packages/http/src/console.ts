/**
 * The operator console at /console: the built single-page app of
 * `@rendezvous/console` (static files, no CDN), any other path under /console
 * answered with its index.html (client-side routes), and its JSON endpoints under
 * /console/api. The page itself needs no credentials; every JSON call does (see
 * console-api.ts). Every console answer carries `Server-Timing: app;dur=<ms>` and the
 * security headers of {@link CONSOLE_SECURITY}.
 */
import fastifyHelmet, { type FastifyHelmetOptions } from "@fastify/helmet";
import fastifyStatic from "@fastify/static";
import { consoleBuilt, consoleDir } from "@rendezvous/console";
import type { Resources } from "@rendezvous/engine";
import { RendezvousError } from "@rendezvous/protocol";
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from "fastify";
import type { CredentialIndex } from "./auth.js";
import { consoleApi } from "./console-api.js";
import { startSampler } from "./console-stats.js";
import { redisUnavailable, sendApiError } from "./http-errors.js";
import type { QueueNames } from "./queue-metrics.js";

export interface ConsoleOptions {
  res: Resources;
  credentials: CredentialIndex;
  /** where Bull Board is mounted (linked from the console) */
  boardPath: string;
  /** the deployment's BullMQ queues (the overview's queue depths) @defaultValue [] */
  queueNames?: QueueNames;
}

export const CONSOLE_PATH = "/console";

/**
 * Security headers of every console answer (@fastify/helmet, scoped to this plugin):
 * the page loads only its own hashed script and stylesheet and talks only to its own
 * origin, may not be framed (its Cancel and Deliver buttons must not be clickjacked),
 * and sends no referrer. HSTS is left to the TLS terminator, which knows the host names.
 */
export const CONSOLE_SECURITY: FastifyHelmetOptions = {
  contentSecurityPolicy: {
    useDefaults: false,
    directives: {
      "default-src": ["'none'"],
      "script-src": ["'self'"],
      "style-src": ["'self'"],
      "img-src": ["'self'", "data:"],
      "font-src": ["'self'"],
      "connect-src": ["'self'"],
      "base-uri": ["'none'"],
      "form-action": ["'self'"],
      "frame-ancestors": ["'none'"],
      "object-src": ["'none'"],
    },
  },
  frameguard: { action: "deny" },
  referrerPolicy: { policy: "no-referrer" },
  strictTransportSecurity: false,
};

const NOT_BUILT = `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>rendezvous console</title></head>
<body><main><h1>The console is not built</h1><p>Run <code>npm run build</code> (or
<code>npm run build --workspace @rendezvous/console</code>) and restart the server.</p></main></body></html>`;

export const consoleRoutes: FastifyPluginAsync<ConsoleOptions> = async (app, opts) => {
  const { res } = opts;
  await app.register(fastifyHelmet, CONSOLE_SECURITY);
  app.addHook("onRequest", async (request) => {
    (request as unknown as { consoleStart: bigint }).consoleStart = process.hrtime.bigint();
  });
  app.addHook("onSend", async (request, reply, payload) => {
    const start = (request as unknown as { consoleStart?: bigint }).consoleStart;
    if (start !== undefined) {
      const ms = Number(process.hrtime.bigint() - start) / 1e6;
      void reply.header("server-timing", `app;dur=${ms.toFixed(2)}`);
    }
    return payload;
  });

  const sampler = startSampler(res.metrics);
  app.addHook("onClose", async () => sampler.stop());

  await app.register(
    async (api) => {
      api.addHook("onRequest", async (_request, reply) => {
        if (res.redis.status === "ready") return;
        return sendApiError(reply, redisUnavailable("redis_down"));
      });
      await api.register(consoleApi, {
        res,
        credentials: opts.credentials,
        sampler,
        boardPath: opts.boardPath,
        queueNames: opts.queueNames ?? [],
      });
      api.setNotFoundHandler((_request, reply) => {
        const err = new RendezvousError("not_found", "no such route");
        return reply.code(404).send(err.toJSON());
      });
    },
    { prefix: `${CONSOLE_PATH}/api` },
  );

  if (!consoleBuilt()) {
    res.logger.warn({ dir: consoleDir }, "the console is not built: /console answers with a hint (npm run build)");
    const hint = async (_request: FastifyRequest, reply: FastifyReply) =>
      reply.code(503).type("text/html; charset=utf-8").send(NOT_BUILT);
    app.get(CONSOLE_PATH, { schema: { hide: true } }, hint);
    app.get(`${CONSOLE_PATH}/*`, { schema: { hide: true } }, hint);
    return;
  }

  await app.register(fastifyStatic, {
    root: consoleDir,
    prefix: `${CONSOLE_PATH}/`,
    wildcard: false,
    index: false,
    cacheControl: false,
    setHeaders(reply, path) {
      // hashed asset names never change content; the page itself is always revalidated
      void reply.header(
        "cache-control",
        path.includes("/assets/") ? "public, max-age=31536000, immutable" : "no-cache",
      );
    },
  });
  const page = async (request: FastifyRequest, reply: FastifyReply) => {
    if (request.url.startsWith(`${CONSOLE_PATH}/api/`)) {
      return reply.code(404).send(new RendezvousError("not_found", "no such route").toJSON());
    }
    return reply.header("cache-control", "no-cache").sendFile("index.html");
  };
  app.get(CONSOLE_PATH, { schema: { hide: true } }, page);
  app.get(`${CONSOLE_PATH}/*`, { schema: { hide: true } }, page);
};
