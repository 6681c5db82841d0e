/**
 * The admin API (docs/api.md, Admin): tenants, host keys, producers and their
 * credentials, event types, the audit trail. Admin token only; every change is one
 * registry commit (engine RegistryAdmin) with its audit entry naming the admin
 * credential's id, never the token. Reads come from Redis, so an answer shows the change
 * just made, whatever this process's view has caught up with.
 */
import { hash, timingSafeEqual } from "node:crypto";
import { PartitionReader, type RegistryAdmin, type RegistrySnapshot, type Resources } from "@rendezvous/engine";
import { errorResponses, RendezvousError } from "@rendezvous/protocol";
import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import {
  AuditPage,
  AuditQuery,
  CreateCredentialBody,
  CreateProducerBody,
  CreateTenantBody,
  CredentialCreated,
  CredentialParams,
  Deleted,
  DeleteTenantQuery,
  EventTypeList,
  EventTypeResponse,
  HostKeyCreated,
  KeyList,
  KeyParams,
  KeyRevoked,
  ProducerCreated,
  ProducerParams,
  ProducerResponse,
  PutEventTypeBody,
  presentEventType,
  presentKey,
  presentProducer,
  presentTenant,
  RegistryVersion,
  RotateBody,
  TenantDeleted,
  TenantList,
  TenantParams,
  TenantResponse,
  TypeParams,
  UpdateProducerBody,
  UpdateTenantBody,
} from "./admin-schemas.js";
import { bearerToken, type CredentialIndex } from "./auth.js";
import { compileSchema, newAjv } from "./producers/validation.js";

export interface AdminRoutesOptions {
  res: Resources;
  admin: RegistryAdmin;
  credentials: CredentialIndex;
}

/** `adm_<first 12 hex digits of sha256(token)>`: names the admin credential in the audit trail. */
export function adminActorId(token: string): string {
  return `adm_${hash("sha256", token, "hex").slice(0, 12)}`;
}

const DEFAULT_OVERLAP_SECONDS = 3600;
const security = [{ adminToken: [] }];
const errors = errorResponses(400, 401, 404, 503);

export const adminRoutes: FastifyPluginAsyncZod<AdminRoutesOptions> = async (app, opts) => {
  const { res, admin, credentials } = opts;
  const reader = new PartitionReader(res.store);
  const actorOf = (request: { headers: Record<string, string | string[] | undefined> }) =>
    adminActorId(bearerToken(request.headers.authorization) as string);

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
  const producerOf = async (tenant: string, producer: string) => {
    const snap = await admin.snapshot();
    const field = `${tenant}/${producer}`;
    const p = snap.records.producers.get(field);
    if (!p || !snap.records.tenants.has(tenant)) throw new RendezvousError("not_found", "no such producer");
    return presentProducer(field, p, await used());
  };

  const tags = ["admin"];
  const route = (operationId: string, summary: string) => ({ operationId, tags, summary, security });

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
      await admin.createTenant(actorOf(request), request.body);
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
      await admin.updateTenant(actorOf(request), request.params.tenant, request.body);
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

  app.post(
    "/v1/admin/tenants/:tenant/producers",
    {
      schema: {
        ...route("createProducer", "A new producer with a generated key and/or HMAC secret (shown once, here)"),
        params: TenantParams,
        body: CreateProducerBody,
        response: { 201: ProducerCreated, ...errors, ...errorResponses(409) },
      },
    },
    async (request, reply) => {
      const { tenant } = request.params;
      const made = await admin.createProducer(actorOf(request), tenant, request.body);
      const producer = await producerOf(tenant, request.body.id);
      return reply.code(201).send({
        producer,
        ...(made.key ? { key: made.key } : {}),
        ...(made.secret ? { secret: made.secret } : {}),
      });
    },
  );

  app.get(
    "/v1/admin/tenants/:tenant/producers/:producer",
    {
      schema: {
        ...route("getProducer", "A producer"),
        params: ProducerParams,
        response: { 200: ProducerResponse, ...errors },
      },
    },
    async (request) => ({ producer: await producerOf(request.params.tenant, request.params.producer) }),
  );

  app.patch(
    "/v1/admin/tenants/:tenant/producers/:producer",
    {
      schema: {
        ...route("updateProducer", "Change a producer's event types, limits, or disable it"),
        params: ProducerParams,
        body: UpdateProducerBody,
        response: { 200: ProducerResponse, ...errors },
      },
    },
    async (request) => {
      const { tenant, producer } = request.params;
      await admin.updateProducer(actorOf(request), tenant, producer, request.body);
      return { producer: await producerOf(tenant, producer) };
    },
  );

  app.delete(
    "/v1/admin/tenants/:tenant/producers/:producer",
    {
      schema: {
        ...route("deleteProducer", "Delete a producer"),
        params: ProducerParams,
        response: { 200: Deleted, ...errors },
      },
    },
    async (request) => {
      const { tenant, producer } = request.params;
      await admin.deleteProducer(actorOf(request), tenant, producer);
      return { deleted: producer };
    },
  );

  app.post(
    "/v1/admin/tenants/:tenant/producers/:producer/credentials",
    {
      schema: {
        ...route(
          "createCredential",
          "A new bearer key or HMAC secret (shown once, here), optionally rotating the others",
        ),
        params: ProducerParams,
        body: CreateCredentialBody,
        response: { 201: CredentialCreated, ...errors },
      },
    },
    async (request, reply) => {
      const { tenant, producer } = request.params;
      const made = await admin.createCredential(
        actorOf(request),
        tenant,
        producer,
        request.body.kind,
        request.body.overlapSeconds,
      );
      return reply.code(201).send({
        credential: presentKey(made.credential, new Map()),
        value: made.value,
        producer: await producerOf(tenant, producer),
      });
    },
  );

  app.delete(
    "/v1/admin/tenants/:tenant/producers/:producer/credentials/:id",
    {
      schema: {
        ...route("revokeCredential", "Revoke a producer's key or secret at once"),
        params: CredentialParams,
        response: { 200: KeyRevoked, ...errors },
      },
    },
    async (request) => {
      const { tenant, producer, id } = request.params;
      const done = await admin.revokeCredential(actorOf(request), tenant, producer, id);
      return { revoked: presentKey(done.revoked, await used()) };
    },
  );

  app.get(
    "/v1/admin/event-types",
    {
      schema: {
        ...route("listEventTypes", "Every registered event type"),
        response: { 200: EventTypeList, ...errors },
      },
    },
    async () => {
      const snap = await admin.snapshot();
      const types = [...snap.records.eventTypes.entries()].sort(([a], [b]) => a.localeCompare(b));
      return { eventTypes: types.map(([t, e]) => presentEventType(t, e)) };
    },
  );

  app.get(
    "/v1/admin/event-types/:type",
    {
      schema: {
        ...route("getEventType", "An event type and its versions"),
        params: TypeParams,
        response: { 200: EventTypeResponse, ...errors },
      },
    },
    async (request) => {
      const e = (await admin.snapshot()).records.eventTypes.get(request.params.type);
      if (!e) throw new RendezvousError("not_found", "no such event type");
      return { eventType: presentEventType(request.params.type, e) };
    },
  );

  app.put(
    "/v1/admin/event-types/:type",
    {
      schema: {
        ...route("putEventType", "Register an event type, or a new version of it"),
        params: TypeParams,
        body: PutEventTypeBody,
        response: { 200: EventTypeResponse, 201: EventTypeResponse, ...errors },
      },
    },
    async (request, reply) => {
      const { type } = request.params;
      if (request.body.payloadSchema) {
        try {
          compileSchema(newAjv(), type, request.body.payloadSchema);
        } catch (err) {
          throw new RendezvousError("invalid_request", "the payload schema does not compile", {
            issues: [
              { path: ["payloadSchema"], message: (err as Error).message.replace(/^invalid config: [^:]*: /, "") },
            ],
          });
        }
      }
      const done = await admin.putEventType(actorOf(request), type, request.body);
      return reply.code(done.created ? 201 : 200).send({ eventType: presentEventType(type, done.record) });
    },
  );

  app.delete(
    "/v1/admin/event-types/:type",
    {
      schema: {
        ...route("deleteEventType", "Remove an event type"),
        params: TypeParams,
        response: { 200: Deleted, ...errors },
      },
    },
    async (request) => {
      await admin.deleteEventType(actorOf(request), request.params.type);
      return { deleted: request.params.type };
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
