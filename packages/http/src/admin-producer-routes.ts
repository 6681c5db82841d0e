/**
 * The admin routes of producers, their credentials and the event types (docs/api.md,
 * Admin), registered by admin-routes.ts behind its admin-token hook.
 */
import type { RegistryAdmin } from "@rendezvous/engine";
import { errorResponses, RendezvousError } from "@rendezvous/protocol";
import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import {
  ADMIN_ERRORS,
  actorOf,
  adminRoute,
  CreateCredentialBody,
  CreateProducerBody,
  CredentialCreated,
  CredentialParams,
  Deleted,
  EventTypeList,
  EventTypeResponse,
  KeyRevoked,
  ProducerCreated,
  ProducerParams,
  ProducerResponse,
  PutEventTypeBody,
  presentEventType,
  presentKey,
  presentProducer,
  TenantParams,
  TypeParams,
  UpdateProducerBody,
} from "./admin-schemas.js";
import { compileSchema, newAjv } from "./producers/validation.js";

export const adminProducerRoutes: FastifyPluginAsyncZod<{ admin: RegistryAdmin }> = async (app, opts) => {
  const { admin } = opts;
  const errors = ADMIN_ERRORS;
  const route = adminRoute;
  const used = () => admin.store.lastUsed();
  const producerOf = async (tenant: string, producer: string) => {
    const snap = await admin.snapshot();
    const field = `${tenant}/${producer}`;
    const p = snap.records.producers.get(field);
    if (!p || !snap.records.tenants.has(tenant)) throw new RendezvousError("not_found", "no such producer");
    return presentProducer(field, p, await used());
  };

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
};
