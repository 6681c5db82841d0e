/**
 * The HTTP app factory: `buildApp(deps)` returns a fastify instance with the
 * operations routes and, for the `api`/`start` roles, the producer routes (ingest),
 * the host routes, the continuation routes, Bull Board at /admin/queues and the OpenAPI document at
 * /openapi.json. `main` only listens.
 */
import fastifySwagger from "@fastify/swagger";
import type { RegistryAdmin, Resources } from "@rendezvous/engine";
import { RendezvousError } from "@rendezvous/protocol";
import Fastify, { type FastifyBaseLogger, type FastifyError, type FastifyInstance, LogController } from "fastify";
import { hasZodFastifySchemaValidationErrors, serializerCompiler, validatorCompiler } from "fastify-type-provider-zod";
import { z } from "zod";
import { AccessLog, type AccessLogMode } from "./access-log.js";
import { adminQueues, BOARD_PATH } from "./admin.js";
import { adminRoutes } from "./admin-routes.js";
import { liveCredentials } from "./auth.js";
import { BodyBudget, DEFAULT_BODY_BUDGET, effectiveBodyBudget, HOST_BODY_LIMIT, limitRequestBodies } from "./bodies.js";
import type { BodyBudgetOptions } from "./body-budget.js";
import { guardConnections } from "./connections.js";
import { consoleRoutes } from "./console.js";
import { continuationRoutes } from "./continuation-routes.js";
import { hostRoutes } from "./host-routes.js";
import { frameworkErrors, lingerAfterTooLarge, redisUnavailable, sendApiError, toApiError } from "./http-errors.js";
import { HttpMetrics, methodOf, routeOf } from "./http-metrics.js";
import { DEFAULT_HTTP_LIMITS, type HttpLimits, limitOptions } from "./limits.js";
import { openapiOptions, recordRoutes } from "./openapi.js";
import { installProcessMetrics, opsRoutes } from "./ops.js";
import { ingestRoutes } from "./producers/routes.js";
import { installQueueGauges, type QueueNames } from "./queue-metrics.js";
import { lazyChildLogger } from "./request-logger.js";
import { traceRequests } from "./request-tracing.js";
import { tenantUsageRoutes } from "./tenant-usage.js";
import { redactTokenUrl, tokenRoutes } from "./token-routes.js";
import { clientAborted } from "./unread-body.js";

/** The API's version in the OpenAPI document. */
const API_VERSION = "0.1.0";

export interface AppDeps {
  res: Resources;
  /** roles of this process (for /readyz) */
  roles: string[];
  running: () => boolean;
  /** serve the API (producer + host routes, Bull Board, OpenAPI) @defaultValue true */
  api?: boolean;
  /** makes sure a timeout bucket job will fire at a new wait's deadline (`TimeoutPlanner.plan`) */
  scheduleTimeout?: (deadlineMs: number) => Promise<unknown>;
  /** BullMQ queue names shown in Bull Board, the queue gauges and the console (a function: as they are now) */
  queueNames?: QueueNames;
  /** connection-level limits @defaultValue DEFAULT_HTTP_LIMITS */
  limits?: HttpLimits;
  /**
   * memory request bodies may hold, per process and per client address (raised to the
   * largest body a route accepts) @defaultValue DEFAULT_BODY_BUDGET
   */
  bodyBudget?: BodyBudgetOptions;
  /** which requests the access log writes a line for (RENDEZVOUS_ACCESS_LOG) @defaultValue "off" */
  accessLog?: AccessLogMode;
  /** serve prom-client's process metrics, labelled with the roles @defaultValue false */
  processMetrics?: boolean;
  /**
   * the registry this process follows (`openRegistry`): serves the admin API and marks the
   * last use of keys; absent = the config file's credentials, no admin API
   */
  registry?: RegistryAdmin;
}

/** How often one process writes one key's last use, at most. */
const LAST_USE_EVERY_MS = 60_000;

/** Writes a key's last use at most once a minute per process (docs/api.md, Admin: `lastUsedAt`). */
function lastUseMarker(registry: RegistryAdmin): (keyId: string) => void {
  const written = new Map<string, number>();
  return (keyId) => {
    const now = Date.now();
    if (now - (written.get(keyId) ?? 0) < LAST_USE_EVERY_MS) return;
    if (written.size > 100_000) written.clear();
    written.set(keyId, now);
    registry.store.markUsed(keyId, now).catch(() => {
      // a lost mark is written again a minute later; never a reason to fail a request
      written.delete(keyId);
    });
  };
}

interface Issue {
  path: Array<string | number>;
  message: string;
}

function validationIssues(err: FastifyError): Issue[] {
  const where = (err as { validationContext?: string }).validationContext;
  return (err.validation ?? []).map((v) => {
    const path = String(v.instancePath ?? "")
      .split("/")
      .filter(Boolean)
      .map((p) => (/^\d+$/.test(p) ? Number(p) : p));
    return { path: where ? [where, ...path] : path, message: String(v.message ?? "invalid") };
  });
}

/**
 * The drain of `app.close()` (SIGTERM): requests already running finish; a request that still
 * arrives on a kept-alive connection is handed back as `503 unavailable`; and every answer from
 * then on closes its connection, so the close does not wait for the clients' keep-alive timeouts.
 * Call before any route or plugin is registered (the hooks must reach every route).
 */
function drain(app: FastifyInstance): void {
  let closing = false;
  app.addHook("preClose", async () => {
    closing = true;
  });
  // callback hooks, not async ones: they run on every request, and a promise each would cost
  app.addHook("onRequest", (_request, reply, done) => {
    if (!closing) return done();
    const err = new RendezvousError("unavailable", "shutting down");
    void reply.code(err.statusCode).header("retry-after", "1").send(err.toJSON());
  });
  app.addHook("onSend", (_request, reply, payload, done) => {
    if (closing) void reply.header("connection", "close");
    done(null, payload);
  });
}

/**
 * The request metrics and the access log, from one `onResponse` hook on every request (a
 * 404 and a request the drain refuses too). Call before any route or plugin is registered.
 */
function observeRequests(app: FastifyInstance, deps: AppDeps, root: FastifyBaseLogger): void {
  const metrics = new HttpMetrics(deps.res.metrics.registry);
  const mode = deps.accessLog ?? "off";
  const access = mode === "off" ? null : new AccessLog(root, mode);
  // a callback hook: no promise per request
  app.addHook("onResponse", (request, reply, done) => {
    const route = routeOf(request);
    const method = methodOf(request);
    metrics.record(route, method, reply);
    access?.write(request, reply, route, method);
    done();
  });
}

export async function buildApp(deps: AppDeps): Promise<FastifyInstance> {
  const { res } = deps;
  const logger = res.logger.child({ system: "http" });
  const app = Fastify({
    loggerInstance: logger as FastifyBaseLogger,
    logController: new LogController({ disableRequestLogging: true }),
    // a request's child logger is made when the request logs (most never do)
    childLoggerFactory: lazyChildLogger,
    bodyLimit: HOST_BODY_LIMIT,
    // a bad URL (undecodable, over-long segment) in the API error shape
    frameworkErrors,
    // the drain answers in the API error shape (see drain below), not fastify's own 503 body
    return503OnClosing: false,
    ...limitOptions(deps.limits ?? DEFAULT_HTTP_LIMITS),
  }) as FastifyInstance;
  recordRoutes(app);
  // the connection caps (per address; idlest closed first at the global cap), not server.maxConnections
  guardConnections(app.server, deps.limits ?? DEFAULT_HTTP_LIMITS, { registry: res.metrics.registry, logger });
  app.setValidatorCompiler(validatorCompiler);
  app.setSerializerCompiler(serializerCompiler);

  app.setErrorHandler((err: FastifyError, request, reply) => {
    let apiError: RendezvousError;
    if (hasZodFastifySchemaValidationErrors(err) && err.validationContext === "params") {
      apiError = new RendezvousError("not_found"); // a malformed id names no resource
    } else if (hasZodFastifySchemaValidationErrors(err)) {
      apiError = new RendezvousError("invalid_request", "the request does not match its schema", {
        issues: validationIssues(err),
      });
    } else {
      apiError = toApiError(err, false);
    }
    if (clientAborted(request)) {
      // the client's doing, and nobody is left to read the answer
      request.log.debug(
        { url: redactTokenUrl(request.url), method: request.method, code: apiError.code },
        "client aborted the request",
      );
    } else if (apiError.code === "unavailable") {
      // Redis trouble is not a bug; under a frozen Redis every request ends here
      request.log.warn(
        { err: err.message, reason: apiError.details.reason, url: redactTokenUrl(request.url) },
        "store unavailable",
      );
    } else if (apiError.statusCode >= 500) {
      request.log.error({ err, url: redactTokenUrl(request.url), method: request.method }, "request failed");
    }
    lingerAfterTooLarge(apiError, request, reply);
    return sendApiError(reply, apiError);
  });
  app.setNotFoundHandler((_request, reply) => {
    const err = new RendezvousError("not_found", "no such route");
    return reply.code(404).send(err.toJSON());
  });

  traceRequests(app, res.tracing);
  observeRequests(app, deps, res.logger as FastifyBaseLogger);
  drain(app);
  installQueueGauges(res, deps.queueNames ?? []);
  if (deps.processMetrics) installProcessMetrics(res.metrics.registry, deps.roles.join("+"));
  const budget = new BodyBudget(effectiveBodyBudget(deps.bodyBudget ?? DEFAULT_BODY_BUDGET, res.config));
  limitRequestBodies(app, budget, res.metrics.registry);
  // the document sees the routes registered after it: the operations routes too
  if (deps.api !== false) await app.register(fastifySwagger, openapiOptions(API_VERSION));
  await app.register(opsRoutes, { res, running: deps.running, roles: deps.roles });
  if (deps.api !== false) {
    const credentials = liveCredentials(
      res.directory,
      res.config.adminToken,
      deps.registry ? lastUseMarker(deps.registry) : undefined,
    );
    await app.register(async (api) => {
      // Without a Redis connection a command would wait in the offline queue (until the
      // command timeout): answer `503 unavailable` (`redis_down`) at once, nothing sent.
      api.addHook("onRequest", (_request, reply, done) => {
        if (res.redis.status === "ready") return done();
        void sendApiError(reply, redisUnavailable("redis_down"));
      });
      await api.register(ingestRoutes, {
        store: res.store,
        config: res.config,
        logger: res.logger,
        metrics: res.metrics,
        credentials,
        directory: res.directory,
        tracing: res.tracing,
        appClosesUnreadBodies: true, // limitRequestBodies (above) installs it on the whole app
      });
      await api.register(hostRoutes, { res, credentials, scheduleTimeout: deps.scheduleTimeout });
      await api.register(continuationRoutes, { res, credentials });
      await api.register(tenantUsageRoutes, { res, credentials });
      await api.register(tokenRoutes, { res, scheduleTimeout: deps.scheduleTimeout });
      if (deps.registry) await api.register(adminRoutes, { res, admin: deps.registry, credentials });
    });
    await app.register(adminQueues, { res, queueNames: deps.queueNames ?? [] });
    await app.register(consoleRoutes, {
      res,
      credentials,
      boardPath: BOARD_PATH,
      queueNames: deps.queueNames ?? [],
    });
    const document = {
      operationId: "getOpenApiDocument",
      tags: ["operations"],
      summary: "This OpenAPI 3.1 document",
      security: [],
      response: { 200: z.looseObject({ openapi: z.string() }).meta({ description: "an OpenAPI 3.1 document" }) },
    };
    app.get("/openapi.json", { schema: document }, async () => app.swagger());
  }
  return app;
}
