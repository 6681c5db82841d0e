/**
 * The admin API (docs/api.md, Admin): tenants, host keys, producers and their
 * credentials, event types, the audit trail. Admin token only; every change is one
 * registry commit (engine RegistryAdmin) with its audit entry naming the admin
 * credential's id, never the token. This file: tenants, host keys, the audit trail;
 * admin-producer-routes.ts: producers, their credentials, event types. Reads come from Redis, so an answer shows the change
 * just made, whatever this process's view has caught up with.
 */
import { hash, timingSafeEqual } from "node:crypto";
import { PartitionReader, type RegistryAdmin, type RegistrySnapshot, type Resources } from "@rendezvous/engine";
import { errorResponses, RendezvousError } from "@rendezvous/protocol";
import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import { adminProducerRoutes } from "./admin-producer-routes.js";
import {
  ADMIN_ERRORS,
  AuditPage,
  AuditQuery,
  actorOf,
  adminRoute,
  CreateTenantBody,
  DeleteTenantQuery,
  HostKeyCreated,
  KeyList,
  KeyParams,
  KeyRevoked,
  presentKey,
  presentTenant,
  RegistryVersion,
  RotateBody,
  storedLimits,
  TenantDeleted,
  TenantList,
  TenantParams,
  TenantResponse,
  UpdateTenantBody,
} from "./admin-schemas.js";
import { bearerToken, type CredentialIndex } from "./auth.js";

export interface AdminRoutesOptions {
  res: Resources;
  admin: RegistryAdmin;
  credentials: CredentialIndex;
}

const DEFAULT_OVERLAP_SECONDS = 3600;
const errors = ADMIN_ERRORS;

export const adminRoutes: FastifyPluginAsyncZod<AdminRoutesOptions> = async (app, opts) => {
  const { res, admin, credentials } = opts;
  const reader = new PartitionReader(res.store);

  app.addHook("onRequest", async (request) => {
    const token = bearerToken(request.headers.authorization);
    const presented = token === undefined ? undefined : hash("sha256", token, "buffer");
    const admin = credentials.adminDigest;
    if (!admin || !presented || !timingSafeEqual(presented, admin)) throw new RendezvousError("unauthorized");
  });

  const used = () => admin.store.lastUsed();
  const tenantOf = async (snap: RegistrySnapshot, name: string) => {
    const t = presentTenant(snap, name, await used());
    if (!t) throw new RendezvousError("not_found", "no such tenant");
    return t;
  };
  const route = adminRoute;
  // producers, their credentials and the event types, behind the same hook
  await app.register(adminProducerRoutes, { admin });

  app.get(
    "/v1/admin/registry",
    {
      schema: {
        ...route("getRegistryVersion", "The registry's version"),
        response: { 200: RegistryVersion, ...errors },
      },
    },
    async () => ({ version: await admin.store.version() }),
  );

  app.get(
    "/v1/admin/tenants",
    { schema: { ...route("listTenants", "Every tenant"), response: { 200: TenantList, ...errors } } },
    async () => {
      const snap = await admin.snapshot();
      const lastUsed = await used();
      const names = [...snap.records.tenants.keys()].sort();
      return { tenants: names.map((n) => presentTenant(snap, n, lastUsed)).filter((t) => t !== undefined) };
    },
  );

  app.post(
    "/v1/admin/tenants",
    {
      schema: {
        ...route("createTenant", "Create a tenant"),
        body: CreateTenantBody,
        response: { 201: TenantResponse, ...errors, ...errorResponses(409) },
      },
    },
    async (request, reply) => {
      const { limits, ...rest } = request.body;
      await admin.createTenant(actorOf(request), { ...rest, ...(limits ? { limits: storedLimits(limits) } : {}) });
      return reply.code(201).send({ tenant: await tenantOf(await admin.snapshot(), request.body.name) });
    },
  );

  app.get(
    "/v1/admin/tenants/:tenant",
    {
      schema: {
        ...route("getTenant", "A tenant, its producers and host keys"),
        params: TenantParams,
        response: { 200: TenantResponse, ...errors },
      },
    },
    async (request) => ({ tenant: await tenantOf(await admin.snapshot(), request.params.tenant) }),
  );

  app.patch(
    "/v1/admin/tenants/:tenant",
    {
      schema: {
        ...route("updateTenant", "Change, disable or enable a tenant"),
        params: TenantParams,
        body: UpdateTenantBody,
        response: { 200: TenantResponse, ...errors },
      },
    },
    async (request) => {
      const { limits, ...rest } = request.body;
      const patch = limits === undefined ? rest : { ...rest, limits: limits === null ? null : storedLimits(limits) };
      await admin.updateTenant(actorOf(request), request.params.tenant, patch);
      return { tenant: await tenantOf(await admin.snapshot(), request.params.tenant) };
    },
  );

  app.delete(
    "/v1/admin/tenants/:tenant",
    {
      schema: {
        ...route("deleteTenant", "Delete a tenant (refused while it has waiting waits, unless forced)"),
        params: TenantParams,
        querystring: DeleteTenantQuery,
        response: { 200: TenantDeleted, ...errors, ...errorResponses(409) },
      },
    },
    async (request) => {
      const name = request.params.tenant;
      if (!(await admin.snapshot()).records.tenants.has(name)) throw new RendezvousError("not_found", "no such tenant");
      const [counts] = await reader.countWaits([name]);
      const waiting = counts?.waiting ?? 0;
      if (waiting > 0 && request.query.force !== "true")
        throw new RendezvousError("tenant_has_waits", undefined, { waiting });
      await admin.deleteTenant(actorOf(request), name);
      return { deleted: name, waiting };
    },
  );

  app.get(
    "/v1/admin/tenants/:tenant/host-keys",
    {
      schema: {
        ...route("listHostKeys", "A tenant's host keys"),
        params: TenantParams,
        response: { 200: KeyList, ...errors },
      },
    },
    async (request) => ({ hostKeys: (await tenantOf(await admin.snapshot(), request.params.tenant)).hostKeys }),
  );

  app.post(
    "/v1/admin/tenants/:tenant/host-keys",
    {
      schema: {
        ...route("createHostKey", "A new host key (its value is shown once, here)"),
        params: TenantParams,
        response: { 201: HostKeyCreated, ...errors },
      },
    },
    async (request, reply) => {
      const made = await admin.createHostKey(actorOf(request), request.params.tenant);
      const stored = (await admin.snapshot()).records.hostKeys.get(made.id);
      const createdAt = stored?.createdAt ?? Date.now();
      return reply.code(201).send({ hostKey: presentKey({ id: made.id, createdAt }, new Map()), key: made.key });
    },
  );

  app.post(
    "/v1/admin/tenants/:tenant/host-keys/:id/rotate",
    {
      schema: {
        ...route("rotateHostKey", "A new host key; the old one works until the overlap ends"),
        params: KeyParams,
        body: RotateBody,
        response: { 201: HostKeyCreated, ...errors },
      },
    },
    async (request, reply) => {
      const { tenant, id } = request.params;
      const overlap = request.body?.overlapSeconds ?? DEFAULT_OVERLAP_SECONDS;
      const made = await admin.rotateHostKey(actorOf(request), tenant, id, overlap);
      const snap = await admin.snapshot();
      const lastUsed = await used();
      const view = (keyId: string) => {
        const h = snap.records.hostKeys.get(keyId);
        return presentKey(h ? { ...h, id: keyId } : { id: keyId, createdAt: Date.now() }, lastUsed);
      };
      return reply.code(201).send({ hostKey: view(made.id), key: made.key, rotated: view(made.rotated) });
    },
  );

  app.delete(
    "/v1/admin/tenants/:tenant/host-keys/:id",
    {
      schema: {
        ...route("revokeHostKey", "Revoke a host key at once"),
        params: KeyParams,
        response: { 200: KeyRevoked, ...errors },
      },
    },
    async (request) => {
      const { tenant, id } = request.params;
      const done = await admin.revokeHostKey(actorOf(request), tenant, id);
      return { revoked: presentKey({ ...done.revoked, id }, await used()) };
    },
  );

  app.get(
    "/v1/admin/audit",
    {
      schema: {
        ...route("listAudit", "The audit trail, newest first"),
        querystring: AuditQuery,
        response: { 200: AuditPage, ...errors },
      },
    },
    async (request) => {
      const page = await admin.store.audit(request.query.limit, request.query.before);
      return {
        entries: page.entries.map((e) => ({ ...e, at: new Date(e.at).toISOString() })),
        nextBefore: page.nextBefore,
      };
    },
  );
};
