/**
 * `GET /v1/tenant/usage` (docs/api.md, Quotas): a tenant's counts against its quotas and
 * the limits in force. Host key (its tenant) or the admin naming `?tenant=`; not counted
 * in `hostRequestsPerSec`, so a throttled tenant can still see why.
 */
import type { Resources } from "@rendezvous/engine";
import { errorResponses } from "@rendezvous/protocol";
import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import { z } from "zod";
import { authenticateHost, type CredentialIndex, readTenant } from "./auth.js";

export interface TenantUsageOptions {
  res: Resources;
  credentials: CredentialIndex;
}

const CountUsage = z.object({ usage: z.number(), limit: z.number().nullable() });
const RateLimit = z.object({ limit: z.number().nullable() });
const TenantUsage = z
  .object({
    usage: z.object({
      tenant: z.string(),
      quotas: z.object({
        waitingWaits: CountUsage,
        bufferedEvents: CountUsage,
        hostRequestsPerSec: RateLimit,
        producerEventsPerSec: RateLimit,
      }),
    }),
  })
  .meta({ id: "TenantUsage" });

export const tenantUsageRoutes: FastifyPluginAsyncZod<TenantUsageOptions> = async (app, opts) => {
  const { res, credentials } = opts;
  app.get(
    "/v1/tenant/usage",
    {
      schema: {
        operationId: "getTenantUsage",
        tags: ["quotas"],
        summary: "A tenant's usage of its quotas",
        querystring: z.object({
          tenant: z.string().max(64).optional().meta({ description: "the tenant (admin token only)" }),
        }),
        response: { 200: TenantUsage, ...errorResponses(400, 401, 404, 503) },
      },
    },
    async (request) => {
      const identity = authenticateHost(credentials, request.headers);
      const tenant = readTenant(identity, request.query.tenant, res.config.tenants);
      const limits = res.store.quotas.limits(tenant);
      const used = await res.store.quotas.usage(tenant);
      return {
        usage: {
          tenant,
          quotas: {
            waitingWaits: { usage: used.waitingWaits, limit: limits.waitingWaits },
            bufferedEvents: { usage: used.bufferedEvents, limit: limits.bufferedEvents },
            hostRequestsPerSec: { limit: limits.hostRequestsPerSec },
            producerEventsPerSec: { limit: limits.producerEventsPerSec },
          },
        },
      };
    },
  );
};
