/**
 * Host routes (docs/api.md, Waits and Direct delivery): register, read, list, patch,
 * cancel, explain and consume waits, and deliver by type. Bodies, params and
 * queries are zod schemas (fastify-type-provider-zod); a bad one answers
 * `400 invalid_request` with `issues`.
 */

import {
  type Config,
  explainWait,
  type ListLease,
  listWaits,
  type Resources,
  withinCommandTimeout,
} from "@rendezvous/engine";
import {
  ConsumeResult,
  CorrelationId,
  EventType,
  errorResponses,
  FailureError,
  InputObject,
  Outcome,
  RegisterResponse,
  RendezvousError,
  Text,
  Wait,
  WaitResponse,
  WaitSpec,
  WaitState,
} from "@rendezvous/protocol";
import type { FastifyReply } from "fastify";
import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import { z } from "zod";
import { authenticateHost, type CredentialIndex, type HostIdentity, readTenant } from "./auth.js";
// wait metadata has the same nesting bound as an event payload
import { MAX_JSON_DEPTH, nestedDeeperThan } from "./producers/validation.js";
import { QuotaGate, quotaTenant } from "./rate-limit.js";
import { childSpan, consumeSpan, inSpan, requestTrace, spanTrace } from "./request-tracing.js";
import { issuedToken } from "./token-routes.js";
import { waitTokenRoutes } from "./wait-token-routes.js";

export interface HostRoutesOptions {
  res: Resources;
  credentials: CredentialIndex;
  /** makes sure a timeout bucket job will fire at a newly registered wait's deadline (`TimeoutPlanner.plan`) */
  scheduleTimeout?: (deadlineMs: number) => Promise<unknown>;
}

const WaitId = z.object({ id: z.string().max(200) });

const TenantQuery = z.object({
  tenant: z.string().max(64).optional().meta({ description: "the tenant (admin token only)" }),
});
/** What every host route may answer: a credential refused, a wait not there, Redis trouble. */
const errors = errorResponses(401, 404, 429, 503);
/** ... and a route with a body or a query: input refused, body over its bound. */
const inputErrors = errorResponses(400, 401, 404, 413, 429, 503);

export const ListQuery = z.strictObject({
  runId: Text(1, 200).optional(),
  state: WaitState.optional(),
  eventType: z.string().min(1).max(128).optional(),
  correlationId: CorrelationId.optional(),
  limit: z.coerce.number().int().min(1).max(500).default(50),
  cursor: z.string().max(2000).optional(),
  tenant: z.string().max(64).optional(),
});

export const PatchBody = z.strictObject({ externalJobId: Text(1, 200) }).meta({ id: "AttachJob" });
export const ConsumeBody = z.strictObject({ worker: Text(1, 200) }).meta({ id: "ConsumeRequest" });
export const DeliverBody = z
  .strictObject({
    eventType: EventType,
    correlationId: CorrelationId.optional(),
    payload: InputObject.optional(),
    // optional rather than `.default(false)`: a generated client would make a field with a default required
    all: z
      .boolean()
      .optional()
      .meta({ description: "resolve every match; when false (the default) more than one match is 409 ambiguous" }),
    outcome: Outcome.optional().meta({ description: "the resolutions' outcome (default success)" }),
    error: FailureError.optional().meta({ description: "a failure's error (only with outcome failure)" }),
  })
  .refine((d) => d.error === undefined || d.outcome === "failure", {
    message: "error is given only with outcome failure",
    path: ["error"],
  })
  .meta({ id: "DeliverRequest" });
const WaitPage = z.object({ waits: z.array(Wait), nextCursor: z.string().nullable() }).meta({ id: "WaitPage" });
const Explanation = z
  .object({
    state: WaitState,
    verdict: z.string().meta({
      description:
        "resolved, timed_out, cancelled, backlog, correlation_mismatch, rejected_signal or no_signal (docs/api.md)",
    }),
    details: z.record(z.string(), z.unknown()),
  })
  .meta({ id: "Explanation" });
const DeliverResult = z.object({ delivered: z.array(z.string()), matched: z.number() }).meta({ id: "DeliverResult" });

/**
 * A list request's share of the process-wide gate on list records, given back once its
 * answer is sent (or its client has gone).
 */
export function leaseUntilSent(res: Resources, reply: FastifyReply): ListLease {
  const lease = res.listGate.lease();
  const release = () => lease.release();
  reply.raw.once("finish", release);
  reply.raw.once("close", release);
  return lease;
}

/** The tenant a wait-by-id route acts for: the host's, or any for the admin. */
function actingTenant(identity: HostIdentity): string | null {
  return identity.kind === "host" ? identity.tenant : null;
}

export const hostRoutes: FastifyPluginAsyncZod<HostRoutesOptions> = async (app, opts) => {
  const { res, credentials } = opts;
  const store = res.store;
  const config: Config = res.config;

  const quotas = new QuotaGate(store, res.metrics);
  app.decorateRequest("identity", null);
  app.addHook("onRequest", async (request) => {
    const identity = authenticateHost(credentials, request.headers, Date.now(), request.raw.socket ?? undefined);
    (request as unknown as { identity: HostIdentity }).identity = identity;
    // the tenant's request rate, and its waiting waits before a registration (docs/api.md, Quotas)
    const tenant = quotaTenant(identity, request.query, config.tenants);
    if (tenant !== null) {
      await quotas.host(tenant, request.method === "POST" && request.routeOptions.url === "/v1/waits");
    }
  });
  // metadata and delivered payloads are plain JSON, at most MAX_JSON_DEPTH levels deep
  app.addHook("preValidation", async (request) => {
    if (nestedDeeperThan(request.body, MAX_JSON_DEPTH + 1)) {
      throw new RendezvousError("invalid_request", "the request does not match its schema", {
        issues: [{ path: ["body"], message: `nested deeper than ${MAX_JSON_DEPTH} levels` }],
      });
    }
  });
  const who = (request: unknown): HostIdentity => (request as { identity: HostIdentity }).identity;

  const found = (wait: Wait | null): Wait => {
    if (!wait) throw new RendezvousError("not_found");
    return wait;
  };

  app.post(
    "/v1/waits",
    {
      schema: {
        operationId: "registerWait",
        tags: ["waits"],
        summary: "Register a wait (idempotent on runId + position)",
        description: "`201` a new wait, `200` the same (runId, position) with the same definition.",
        body: WaitSpec,
        querystring: TenantQuery,
        response: { 200: RegisterResponse, 201: RegisterResponse, ...inputErrors, ...errorResponses(409) },
      },
    },
    async (request, reply) => {
      const tenant = readTenant(who(request), request.query.tenant, config.tenants);
      const { created, wait, token } = await store.register(tenant, request.body, requestTrace(request));
      if (created && wait.state === "waiting" && wait.deadline && opts.scheduleTimeout) {
        // The queue's connection is a blocking one (no command timeout of its own): bound it
        // here. A job not added is re-created by the scheduler's sweep of the deadlines.
        await withinCommandTimeout(res.commandTimeoutMs, opts.scheduleTimeout(Date.parse(wait.deadline)));
      }
      if (token !== undefined) {
        return reply.code(201).send({ wait, token: issuedToken(config.publicUrl, token) });
      }
      return reply.code(created ? 201 : 200).send({ wait });
    },
  );

  app.get(
    "/v1/waits",
    {
      schema: {
        operationId: "listWaits",
        tags: ["waits"],
        summary: "List waits (by run, type, match key, state), a page at a time",
        querystring: ListQuery,
        response: { 200: WaitPage, ...errorResponses(400, 401, 404, 429, 503) },
      },
    },
    async (request, reply) => {
      const { limit, cursor, tenant: named, ...filter } = request.query;
      const tenant = readTenant(who(request), named, config.tenants);
      return listWaits(store, tenant, filter, { limit, cursor, lease: leaseUntilSent(res, reply) });
    },
  );

  app.get(
    "/v1/waits/:id",
    {
      schema: {
        operationId: "getWait",
        tags: ["waits"],
        summary: "Read a wait",
        params: WaitId,
        response: { 200: WaitResponse, ...errors },
      },
    },
    async (request) => ({ wait: found(await store.getWait(actingTenant(who(request)), request.params.id)) }),
  );

  app.patch(
    "/v1/waits/:id",
    {
      schema: {
        operationId: "attachJob",
        tags: ["waits"],
        summary: "Attach the external job id",
        params: WaitId,
        body: PatchBody,
        response: { 200: WaitResponse, ...inputErrors },
      },
    },
    async (request) => ({
      wait: await store.attachJob(actingTenant(who(request)), request.params.id, request.body.externalJobId),
    }),
  );

  app.delete(
    "/v1/waits/:id",
    {
      schema: {
        operationId: "cancelWait",
        tags: ["waits"],
        summary: "Cancel a waiting wait",
        params: WaitId,
        response: { 200: WaitResponse, ...errors, ...errorResponses(409) },
      },
    },
    async (request) => {
      const span = childSpan(request, res.tracing, "rendezvous.cancel", "internal", {
        "rendezvous.wait.id": request.params.id,
        "rendezvous.resolution.kind": "cancel",
      });
      // the cancel's context goes on with the continuation (the registration is linked there)
      return inSpan(span, async () => ({
        wait: await store.cancel(actingTenant(who(request)), request.params.id, spanTrace(span, request)),
      }));
    },
  );

  app.get(
    "/v1/waits/:id/explain",
    {
      schema: {
        operationId: "explainWait",
        tags: ["waits"],
        summary: "Why is this wait where it is?",
        params: WaitId,
        response: { 200: Explanation, ...errors },
      },
    },
    async (request) => {
      const wait = found(await store.getWait(actingTenant(who(request)), request.params.id));
      return explainWait(store, wait, { backlogThresholdMs: config.backlogThresholdMs });
    },
  );

  app.post(
    "/v1/waits/:id/consume",
    {
      schema: {
        operationId: "consumeWait",
        tags: ["waits"],
        summary: "Claim a settled wait's continuation (first claimer wins)",
        params: WaitId,
        body: ConsumeBody,
        response: { 200: ConsumeResult, ...inputErrors, ...errorResponses(409) },
      },
    },
    async (request) => {
      const tenant = actingTenant(who(request));
      const span = consumeSpan(res.tracing, requestTrace(request), tenant ?? "", request.params.id);
      return inSpan(span, async () => {
        const c = await store.consume(tenant, request.params.id, request.body.worker);
        span?.setAttributes({ "rendezvous.consume.first": c.first });
        return c;
      });
    },
  );

  app.post(
    "/v1/deliver",
    {
      schema: {
        operationId: "deliver",
        tags: ["delivery"],
        summary: "Resolve waiting waits of a type directly",
        body: DeliverBody,
        querystring: TenantQuery,
        response: { 200: DeliverResult, ...inputErrors, ...errorResponses(409) },
      },
    },
    async (request) => {
      const tenant = readTenant(who(request), request.query.tenant, config.tenants);
      const span = childSpan(request, res.tracing, "rendezvous.deliver", "internal", {
        "rendezvous.tenant": tenant,
        "rendezvous.resolution.kind": "deliver",
      });
      const result = await inSpan(span, async () => {
        const r = await store.deliver(tenant, request.body, spanTrace(span, request));
        span?.setAttributes({ "rendezvous.waits.delivered": r.delivered.length });
        return r;
      });
      if (result.delivered.length > 0)
        res.metrics.resolutions.inc({ kind: "deliver", tenant }, result.delivered.length);
      return result;
    },
  );

  await app.register(waitTokenRoutes, { res, scheduleTimeout: opts.scheduleTimeout });
};
