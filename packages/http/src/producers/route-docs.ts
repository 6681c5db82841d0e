/**
 * What the OpenAPI document says of the producer routes and the event read. The routes
 * read their bodies as raw bytes (a signature covers them) and check them themselves
 * (./validation.ts), so these schemas describe and never validate or serialize: each
 * route takes `DOCUMENTED_ONLY`, compilers that pass the request through untouched and
 * write answers as `JSON.stringify` does (fastify's own way for a route with no schema).
 */
import {
  BatchResults,
  EventBatch,
  EventInput,
  EventResponse,
  errorResponses,
  PublishResult,
  Text,
} from "@rendezvous/protocol";
import type { FastifySchema } from "fastify";
import { z } from "zod";

/** Schemas for the document only: nothing is validated, answers are plain JSON. */
export const DOCUMENTED_ONLY = {
  validatorCompiler: () => () => true,
  serializerCompiler: () => (data: unknown) => JSON.stringify(data),
};

/** A route's schema with what the document adds (the fields @fastify/swagger reads). */
export type DocumentedSchema = FastifySchema & {
  operationId: string;
  tags?: string[];
  summary?: string;
  description?: string;
  security?: Array<Record<string, string[]>>;
};

const ProducerHeaders = z.object({
  "Rendezvous-Producer": z
    .string()
    .meta({ description: "`<tenant>/<producerId>`: the producer the credential (bearer key or signature) is of" }),
});

/** Either a producer's bearer key or the HMAC signature header, with `Rendezvous-Producer`. */
const PRODUCER_SECURITY: Array<Record<string, string[]>> = [{ producerKey: [] }, { producerSignature: [] }];

export const publishEventSchema: DocumentedSchema = {
  operationId: "publishEvent",
  tags: ["events"],
  summary: "Publish an event",
  description:
    "`202` accepted (durably appended), `200` duplicate (same id, same content: the original). The raw body is what a signature covers.",
  security: PRODUCER_SECURITY,
  headers: ProducerHeaders,
  body: EventInput,
  response: {
    200: PublishResult,
    202: PublishResult,
    ...errorResponses(400, 401, 403, 409, 413, 429, 503),
  },
};

export const publishEventsSchema: DocumentedSchema = {
  operationId: "publishEvents",
  tags: ["events"],
  summary: "Publish up to 500 events (one credential for the whole body)",
  description: "One result per event, in order; one bad event does not spoil the rest.",
  security: PRODUCER_SECURITY,
  headers: ProducerHeaders,
  body: EventBatch,
  response: { 200: BatchResults, ...errorResponses(400, 401, 413, 429, 503) },
};

export const getEventSchema: DocumentedSchema = {
  operationId: "getEvent",
  tags: ["events"],
  summary: "Read an accepted event",
  params: z.object({ producer: z.string(), eventId: Text(1, 200) }),
  querystring: z.object({
    tenant: z.string().optional().meta({ description: "the tenant (admin token only)" }),
  }),
  response: { 200: EventResponse, ...errorResponses(400, 401, 404, 429, 503) },
};
