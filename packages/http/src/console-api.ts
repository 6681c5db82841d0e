/**
 * The console's own JSON endpoints under /console/api (the console also calls the
 * host routes: a wait, explain, cancel, deliver, an event). Same credentials as the
 * host routes (`Authorization: Bearer <hostKey | admin token>`), same error envelope:
 * the admin reads every tenant, a host key its own only (another tenant's ids and
 * names answer 404).
 */

import { listWaitsOfTenants, PartitionReader, type Resources } from "@rendezvous/engine";
import {
  continuationQueueOf,
  errorResponses,
  RendezvousError,
  type Wait,
  Wait as WaitSchema,
} from "@rendezvous/protocol";
import { Queue } from "bullmq";
import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import { z } from "zod";
import { authenticateHost, type CredentialIndex, type HostIdentity, readTenant } from "./auth.js";
import { HttpFiguresSchema, QueueFiguresSchema, queueFigures } from "./console-figures.js";
import { httpFigures, latenessOf, rates, resolutionsOf, type Sampler } from "./console-stats.js";
import { ListQuery, leaseUntilSent } from "./host-routes.js";
import type { QueueNames } from "./queue-metrics.js";

export interface ConsoleApiOptions {
  res: Resources;
  credentials: CredentialIndex;
  sampler: Sampler;
  /** where Bull Board is mounted */
  boardPath: string;
  /** the deployment's BullMQ queues (the overview's queue depths) */
  queueNames: QueueNames;
}

const errors = errorResponses(400, 401, 404, 503);

/** A wait as one row of the waits page. */
const WaitRow = WaitSchema.pick({
  id: true,
  tenant: true,
  runId: true,
  position: true,
  eventType: true,
  correlationId: true,
  state: true,
  createdAt: true,
  deadline: true,
}).extend({ resolvedBy: z.string().nullable() });

/** The host routes' list query, across tenants: smaller pages, longer (cross-tenant) cursors. */
export const ConsoleListQuery = ListQuery.extend({
  tenant: z.string().min(1).max(64).optional(),
  limit: z.coerce.number().int().min(1).max(200).default(50),
  cursor: z.string().max(4000).optional(),
});

const Identity = z.object({ kind: z.enum(["admin", "host"]), tenant: z.string().nullable() });

function row(w: Wait): z.infer<typeof WaitRow> {
  return {
    id: w.id,
    tenant: w.tenant,
    runId: w.runId,
    position: w.position,
    eventType: w.eventType,
    correlationId: w.correlationId,
    state: w.state,
    createdAt: w.createdAt,
    deadline: w.deadline,
    resolvedBy: w.resolution?.kind ?? null,
  };
}

export const consoleApi: FastifyPluginAsyncZod<ConsoleApiOptions> = async (app, opts) => {
  const { res, credentials, sampler } = opts;
  const store = res.store;
  const reader = new PartitionReader(store);
  const tenants = Object.keys(res.config.tenants).sort();
  const queuesOf = queueFigures(res, opts.queueNames);

  const connection = res.connect("console");
  const queues = new Map<string, Queue>();
  /** The queue a wait's continuation is on: its tenant's, or the group's its event type is routed to. */
  const queueOf = (tenant: string, eventType: string): Queue => {
    const name = continuationQueueOf(res.config.tenants, tenant, eventType);
    let q = queues.get(name);
    if (!q) {
      q = new Queue(name, { connection, prefix: res.queuePrefix });
      queues.set(name, q);
    }
    return q;
  };
  app.addHook("onClose", async () => {
    await Promise.all([...queues.values()].map((q) => q.close()));
  });

  app.decorateRequest("identity", null);
  app.addHook("onRequest", async (request) => {
    (request as unknown as { identity: HostIdentity }).identity = authenticateHost(credentials, request.headers);
  });
  const who = (request: unknown): HostIdentity => (request as { identity: HostIdentity }).identity;
  /** the tenants a request may see, narrowed by `?tenant=` */
  const visible = (identity: HostIdentity, named: string | undefined): string[] => {
    if (identity.kind === "admin" && named === undefined) return tenants;
    return [readTenant(identity, named, res.config.tenants)];
  };

  app.get(
    "/session",
    {
      schema: {
        summary: "Who the console speaks for",
        response: {
          200: z.object({ identity: Identity, tenants: z.array(z.string()), board: z.string().nullable() }),
          ...errors,
        },
      },
    },
    async (request) => {
      const id = who(request);
      return {
        identity: { kind: id.kind, tenant: id.kind === "host" ? id.tenant : null },
        tenants: id.kind === "host" ? [id.tenant] : tenants,
        board: id.kind === "admin" ? opts.boardPath : null,
      };
    },
  );

  app.get(
    "/overview",
    {
      schema: {
        summary: "Waits by state per tenant, event rates, stream lag per partition, timeout lateness",
        querystring: z.strictObject({ tenant: z.string().min(1).max(64).optional() }),
        response: {
          200: z.object({
            at: z.string(),
            tenants: z.array(z.object({ tenant: z.string(), waiting: z.number(), settled: z.number() })),
            overdue: z.number().nullable(),
            /** null for a host key: a partition's stream is shared by every tenant */
            partitions: z
              .array(
                z.object({
                  partition: z.number(),
                  undelivered: z.number(),
                  pending: z.number(),
                  oldestUnprocessedAgeMs: z.number().nullable(),
                }),
              )
              .nullable(),
            series: z.array(
              z.object({
                at: z.string(),
                accepted: z.number(),
                duplicate: z.number(),
                rejected: z.number().nullable(),
                latenessMs: z.number().nullable(),
              }),
            ),
            totals: z.object({
              accepted: z.number(),
              duplicate: z.number(),
              rejected: z.number().nullable(),
              rejectedByReason: z.record(z.string(), z.number()).nullable(),
              timeoutsFired: z.number(),
              latenessMeanMs: z.number().nullable(),
              resolutions: z.record(z.string(), z.number()),
            }),
            /** null for a host key: the request counter is the process's */
            http: HttpFiguresSchema,
            queues: QueueFiguresSchema,
          }),
          ...errors,
        },
      },
    },
    async (request) => {
      const id = who(request);
      const shown = visible(id, request.query.tenant);
      const admin = id.kind === "admin";
      const tenantFilter = admin && request.query.tenant === undefined ? null : (shown[0] as string);
      // A host key sees its own tenant's figures only: what is shared by every tenant
      // (partition backlog, overdue waits, refusals by reason) is the admin's.
      const [counts, backlog, overdue, samples, queues] = await Promise.all([
        reader.countWaits(shown),
        admin ? reader.backlog() : Promise.resolve(null),
        admin ? reader.overdueCount() : Promise.resolve(null),
        sampler.read(),
        // the shared queues are the admin's, over every tenant
        queuesOf(shown, tenantFilter === null),
      ]);
      const last = samples[samples.length - 1];
      const lateness = latenessOf(last, tenantFilter);
      const sum = (m: Record<string, number> | undefined) =>
        tenantFilter === null ? Object.values(m ?? {}).reduce((a, b) => a + b, 0) : (m?.[tenantFilter] ?? 0);
      return {
        at: new Date().toISOString(),
        tenants: counts,
        overdue,
        partitions:
          backlog?.map((b) => ({
            partition: b.partition,
            undelivered: Math.max(0, b.undelivered),
            pending: b.pending,
            oldestUnprocessedAgeMs: b.oldestUnprocessedAgeMs,
          })) ?? null,
        series: rates(samples, tenantFilter),
        totals: {
          accepted: sum(last?.accepted),
          duplicate: sum(last?.duplicate),
          rejected: admin ? (last?.rejected ?? 0) : null,
          rejectedByReason: admin ? (last?.rejectedByReason ?? {}) : null,
          timeoutsFired: lateness.count,
          latenessMeanMs: lateness.count > 0 ? (lateness.sum / lateness.count) * 1000 : null,
          resolutions: resolutionsOf(last, tenantFilter),
        },
        http: admin ? httpFigures(samples) : null,
        queues,
      };
    },
  );

  app.get(
    "/waits",
    {
      schema: {
        summary: "Waits of one tenant or (admin) all, filtered, a page at a time through the indexes",
        querystring: ConsoleListQuery,
        response: { 200: z.object({ waits: z.array(WaitRow), nextCursor: z.string().nullable() }), ...errors },
      },
    },
    async (request, reply) => {
      const { tenant, limit, cursor, ...filter } = request.query;
      const shown = visible(who(request), tenant);
      const page = await listWaitsOfTenants(store, shown, filter, {
        limit,
        cursor,
        lease: leaseUntilSent(res, reply),
      });
      return { waits: page.waits.map(row), nextCursor: page.nextCursor };
    },
  );

  app.get(
    "/waits/:id/job",
    {
      schema: {
        summary: "The continuation job of a wait (BullMQ queue continuations.<tenant>[.<group>], job id = wait id)",
        params: z.object({ id: z.string().max(200) }),
        response: {
          200: z.object({
            queue: z.string(),
            jobId: z.string(),
            job: z
              .object({
                state: z.string(),
                attemptsMade: z.number(),
                createdAt: z.string().nullable(),
                processedAt: z.string().nullable(),
                finishedAt: z.string().nullable(),
                failedReason: z.string().nullable(),
              })
              .nullable(),
            board: z.string().nullable(),
          }),
          ...errors,
        },
      },
    },
    async (request) => {
      const id = who(request);
      const wait = await store.getWait(id.kind === "host" ? id.tenant : null, request.params.id);
      if (!wait) throw new RendezvousError("not_found");
      const queue = queueOf(wait.tenant, wait.eventType);
      const job = await queue.getJob(wait.id);
      const at = (ms: number | undefined) => (ms ? new Date(ms).toISOString() : null);
      return {
        queue: queue.name,
        jobId: wait.id,
        job: job
          ? {
              state: String(await job.getState()),
              attemptsMade: job.attemptsMade,
              createdAt: at(job.timestamp),
              processedAt: at(job.processedOn),
              finishedAt: at(job.finishedOn),
              failedReason: job.failedReason || null,
            }
          : null,
        board:
          id.kind === "admin"
            ? `${opts.boardPath}/queue/${encodeURIComponent(queue.name)}/${encodeURIComponent(wait.id)}`
            : null,
      };
    },
  );

  app.get(
    "/rejections",
    {
      schema: {
        summary: "Recent refused events with their reasons (no payloads)",
        querystring: z.strictObject({
          tenant: z.string().min(1).max(64).optional(),
          limit: z.coerce.number().int().min(1).max(500).default(100),
        }),
        response: {
          200: z.object({
            rejections: z.array(
              z.object({
                tenant: z.string(),
                eventType: z.string(),
                correlationId: z.string(),
                producer: z.string(),
                eventId: z.string().nullable(),
                reason: z.string(),
                detail: z.string().nullable(),
                at: z.string(),
              }),
            ),
          }),
          ...errors,
        },
      },
    },
    async (request) => {
      const id = who(request);
      const shown = visible(id, request.query.tenant);
      const all = id.kind === "admin" && request.query.tenant === undefined;
      return {
        rejections: await reader.recentRejections(all ? null : (shown[0] as string), { limit: request.query.limit }),
      };
    },
  );
};
