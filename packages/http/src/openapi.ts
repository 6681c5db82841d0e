/**
 * The OpenAPI 3.1 document at /openapi.json (docs/api.md, OpenAPI): @fastify/swagger
 * collects every route registered after it, fastify-type-provider-zod turns each route's
 * zod schemas into JSON Schema 2020-12, and each zod schema named with `.meta({ id })`
 * becomes a component that the routes `$ref`. `tidyComponents` (./openapi-components.ts)
 * then gives every request body and success answer a named component.
 *
 * Bull Board (/admin/queues) and the console (/console, its page and its own API) are
 * left out: they are operator UIs, not part of the contract a generated client uses.
 */
import type { SwaggerOptions } from "@fastify/swagger";
import type { FastifyInstance } from "fastify";
import { createJsonSchemaTransform, jsonSchemaTransformObject } from "fastify-type-provider-zod";
import type { OpenAPIV3_1 } from "openapi-types";
import { tidyComponents } from "./openapi-components.js";

/** The event read route takes its id as a wildcard (ids may be long); the document names it `{eventId}`. */
const EVENT_READ_ROUTE = "/v1/events/:producer/*";
const HIDDEN_PREFIXES = ["/admin/queues", "/console"];

const zodTransform = createJsonSchemaTransform({ zodToJsonConfig: { target: "draft-2020-12" } });

const transform: typeof zodTransform = (input) => {
  if (HIDDEN_PREFIXES.some((p) => input.url === p || input.url.startsWith(`${p}/`))) {
    return { schema: { hide: true }, url: input.url };
  }
  const out = zodTransform(input);
  return input.url === EVENT_READ_ROUTE ? { ...out, url: "/v1/events/:producer/:eventId" } : out;
};

const securitySchemes: Record<string, OpenAPIV3_1.SecuritySchemeObject> = {
  hostKey: {
    type: "http",
    scheme: "bearer",
    description: "A tenant's host key (`hostKeys`), or the admin token (which names `?tenant=` where a route has it)",
  },
  adminToken: {
    type: "http",
    scheme: "bearer",
    description: "The admin token (`adminToken`): the admin routes under /v1/admin",
  },
  producerKey: {
    type: "http",
    scheme: "bearer",
    description: "A producer's bearer key (`keys`), sent with the `Rendezvous-Producer` header",
  },
  producerSignature: {
    type: "apiKey",
    in: "header",
    name: "Rendezvous-Signature",
    description:
      '`t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<raw body>")>` with one of the producer\'s `secrets`, sent with the `Rendezvous-Producer` header; |now − t| ≤ 300 s',
  },
};

/** The @fastify/swagger options of the API (register it before any documented route). */
export function openapiOptions(version: string): SwaggerOptions {
  return {
    openapi: {
      openapi: "3.1.0",
      info: {
        title: "rendezvous",
        version,
        description: "Durable waits for external events. The contract: docs/api.md.",
      },
      servers: [{ url: "/", description: "the server that serves this document" }],
      components: { securitySchemes },
      security: [{ hostKey: [] }],
      tags: [
        { name: "events", description: "Producers send events; hosts read them" },
        { name: "waits", description: "Hosts register, read, list, explain, cancel and consume waits" },
        { name: "delivery", description: "Hosts resolve waits directly" },
        { name: "continuations", description: "Hosts claim their tenant's continuations over HTTP" },
        { name: "operations", description: "Health, readiness and metrics (no credentials)" },
        { name: "admin", description: "Tenants, producers, credentials and event types at run time (admin token)" },
      ],
    },
    transform,
    transformObject: (doc) => tidyComponents(jsonSchemaTransformObject(doc) as OpenAPIV3_1.Document),
  };
}

/** A route as fastify registered it. */
export interface RegisteredRoute {
  method: string;
  url: string;
  operationId?: string;
  hidden: boolean;
}

const registered = new WeakMap<FastifyInstance, RegisteredRoute[]>();

/**
 * Records every route registered on `app` from now on (call first): what the OpenAPI
 * test holds against the document, so that a route without an operationId is seen.
 */
export function recordRoutes(app: FastifyInstance): void {
  const routes: RegisteredRoute[] = [];
  registered.set(app, routes);
  app.addHook("onRoute", (route) => {
    const schema = route.schema as { operationId?: string; hide?: boolean } | undefined;
    for (const method of [route.method].flat()) {
      routes.push({
        method,
        url: route.url,
        operationId: schema?.operationId,
        hidden: HIDDEN_PREFIXES.some((p) => route.url === p || route.url.startsWith(`${p}/`)),
      });
    }
  });
}

/** The routes `recordRoutes` saw on `app`. */
export function registeredRoutes(app: FastifyInstance): readonly RegisteredRoute[] {
  return registered.get(app) ?? [];
}
