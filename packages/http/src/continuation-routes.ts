/**
 * Continuation routes (docs/api.md, Continuations over HTTP): claim leases on the
 * caller's tenant's continuations (long poll), acknowledge, extend. Host key, or the
 * admin token with `?tenant=`. Bodies, params and answers are zod schemas.
 */

import type { Config, Resources } from "@rendezvous/engine";
import { ContinuationGroupName, errorResponses, RendezvousError, Text } from "@rendezvous/protocol";
import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import { z } from "zod";
import { authenticateHost, type CredentialIndex, type HostIdentity, readTenant } from "./auth.js";
import { ContinuationClaims, ContinuationLease } from "./continuation-claims.js";
import { QuotaGate, quotaTenant } from "./rate-limit.js";
import { requestTrace } from "./request-tracing.js";

export interface ContinuationRoutesOptions {
  res: Resources;
  credentials: CredentialIndex;
}

const TenantQuery = z.object({ tenant: z.string().max(64).optional() });
const LeaseMs = z.number().int().min(1000).max(600_000);
export const ClaimBody = z.strictObject({
  worker: Text(1, 200),
  max: z.number().int().min(1).max(100).default(10),
  leaseMs: LeaseMs.default(30_000),
  waitMs: z.number().int().min(0).max(20_000).default(0),
  /** a named group of the tenant's continuationGroups; absent = the default queue */
  group: ContinuationGroupName.optional(),
  /** consume each leased wait as `worker` before answering (each lease then carries `consumed`) */
  consume: z.boolean().default(false),
});
export const AckManyBody = z.strictObject({ leaseIds: z.array(z.string().max(400)).min(1).max(100) });
export const ExtendBody = z.strictObject({ leaseMs: LeaseMs.default(30_000) });
/** A lease id is opaque; one the server never issued answers `409 lease_expired`. */
const LeaseParams = z.object({ leaseId: z.string().max(400) });
/** every route takes a body (413 past the host body bound); 409 is lease_expired, 404 a malformed lease id */
const errors = errorResponses(400, 401, 404, 409, 413, 429, 503);

export const continuationRoutes: FastifyPluginAsyncZod<ContinuationRoutesOptions> = async (app, opts) => {
  const { res, credentials } = opts;
  const config: Config = res.config;
  const claims = new ContinuationClaims(res);
  // a long poll answers `[]` as soon as the server drains; the workers close with the app
  app.addHook("preClose", async () => claims.drain());
  app.addHook("onClose", async () => claims.close());

  const quotas = new QuotaGate(res.store, res.metrics);
  app.decorateRequest("identity", null);
  app.addHook("onRequest", async (request) => {
    const identity = authenticateHost(credentials, request.headers, Date.now(), request.raw.socket ?? undefined);
    (request as unknown as { identity: HostIdentity }).identity = identity;
    // the tenant's request rate (docs/api.md, Quotas)
    const tenant = quotaTenant(identity, request.query, config.tenants);
    if (tenant !== null) await quotas.host(tenant, false);
  });
  const tenantOf = (request: unknown, named: string | undefined): string =>
    readTenant((request as { identity: HostIdentity }).identity, named, config.tenants);

  app.post(
    "/v1/continuations/claim",
    {
      schema: {
        operationId: "claimContinuations",
        summary: "Lease continuations of the caller's tenant (long poll up to waitMs)",
        body: ClaimBody,
        querystring: TenantQuery,
        response: { 200: z.object({ continuations: z.array(ContinuationLease) }), ...errors },
      },
    },
    async (request, reply) => {
      const tenant = tenantOf(request, request.query.tenant);
      const { max, leaseMs, waitMs, group, consume, worker } = request.body;
      if (group !== undefined && !claims.hasGroup(tenant, group)) {
        throw new RendezvousError("invalid_request", "no such continuation group in the tenant's config", {
          issues: [{ path: ["group"], message: "unknown group" }],
        });
      }
      // a client gone mid-poll takes nothing more (what it already took comes back after its lease);
      // before the answer, the response's `close` is the connection's
      const gone = new AbortController();
      reply.raw.once("close", () => gone.abort());
      const consumeAs = consume ? worker : undefined;
      const trace = requestTrace(request);
      const continuations = await claims.claim(tenant, { group, max, leaseMs, waitMs, consumeAs, trace }, gone.signal);
      request.log.debug({ tenant, group, worker, n: continuations.length }, "continuations leased");
      return { continuations };
    },
  );

  app.post(
    "/v1/continuations/ack",
    {
      schema: {
        operationId: "ackContinuations",
        summary: "Acknowledge several continuation leases; which were done, which had expired",
        body: AckManyBody,
        querystring: TenantQuery,
        response: { 200: z.object({ acked: z.array(z.string()), expired: z.array(z.string()) }), ...errors },
      },
    },
    async (request) => claims.ackMany(tenantOf(request, request.query.tenant), request.body.leaseIds),
  );

  app.post(
    "/v1/continuations/:leaseId/ack",
    {
      schema: {
        operationId: "ackContinuation",
        summary: "Acknowledge a continuation lease: done, not handed out again",
        params: LeaseParams,
        querystring: TenantQuery,
        response: { 200: z.object({ acked: z.literal(true) }), ...errors },
      },
    },
    async (request) => {
      await claims.ack(tenantOf(request, request.query.tenant), request.params.leaseId);
      return { acked: true as const };
    },
  );

  app.post(
    "/v1/continuations/:leaseId/extend",
    {
      schema: {
        operationId: "extendContinuationLease",
        summary: "Extend a continuation lease to leaseMs from now",
        params: LeaseParams,
        body: ExtendBody.optional(),
        querystring: TenantQuery,
        response: { 200: z.object({ leaseExpiresAt: z.string() }), ...errors },
      },
    },
    async (request) => {
      const tenant = tenantOf(request, request.query.tenant);
      const leaseMs = request.body?.leaseMs ?? 30_000;
      return { leaseExpiresAt: await claims.extend(tenant, request.params.leaseId, leaseMs) };
    },
  );
};
