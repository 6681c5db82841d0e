/**
 * The producer routes (docs/api.md, Events) as one encapsulated fastify plugin:
 * `POST /v1/events`, `POST /v1/events/batch`, `GET /v1/events/:producer/:eventId`.
 *
 * The declared size and the credential are checked from the headers before any body
 * byte is read (a wrong key, an unknown producer, no credential: `401`, and the
 * connection is closed after it); only a signature's HMAC waits for the body. Bodies
 * arrive as raw bytes (signatures cover them), bounded by `maxPayloadBytes` (500 times
 * that for a batch) before anything is parsed. Order per request: declared size →
 * credential (headers) → body budget → size read → signature → JSON → rate limit →
 * validation → store. The error handler answers every failure in the API error shape;
 * bad input never gets a 5xx, nor does a client that went away.
 */

import {
  type Config,
  createLogger,
  createMetrics,
  type Directory,
  type IngestResult,
  type Logger,
  type Metrics,
  NO_TRACING,
  type Store,
  type Tracing,
  UNKNOWN_TENANT,
} from "@rendezvous/engine";
import { Name, RendezvousError } from "@rendezvous/protocol";
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from "fastify";
import {
  authenticateHost,
  authenticateProducerHeaders,
  type CredentialIndex,
  indexCredentials,
  type ProducerHeaders,
  type ProducerIdentity,
  readTenant,
  verifyProducerBody,
} from "../auth.js";
import { type BodyBudget, limitBodies } from "../body-budget.js";
import { lingerAfterTooLarge, sendApiError, toApiError } from "../http-errors.js";
import { QuotaGate } from "../rate-limit.js";
import { childSpan, inSpan, spanTrace } from "../request-tracing.js";
import { clientAborted, closeUnreadBodies } from "../unread-body.js";
import { encodeBatchAnswer, encodeSingleAnswer } from "./answer.js";
import { MAX_BATCH, ProducerIngest } from "./ingest.js";
import { DOCUMENTED_ONLY, getEventSchema, publishEventSchema, publishEventsSchema } from "./route-docs.js";
import { EventValidator, invalidEvent, MAX_JSON_DEPTH, parseJsonBody, poisonedPath, scanEvent } from "./validation.js";

export interface IngestRoutesOptions {
  store: Store;
  config: Config;
  /**
   * the credentials to check (the server's live index of its Directory)
   * @defaultValue indexCredentials(config), fixed
   */
  credentials?: CredentialIndex;
  /** payload schemas follow its event types (compiled once per version) @defaultValue the config's, fixed */
  directory?: Directory;
  /** system logger (a child `{system: "ingest"}` is used) @defaultValue createLogger() */
  logger?: Logger;
  /** @defaultValue createMetrics() on a private registry */
  metrics?: Metrics;
  /** clock for signature timestamps and the rate limit, ms @defaultValue Date.now */
  now?: () => number;
  /**
   * counts this plugin's bodies against a budget; leave it out when the server already
   * counts every body (it does: `limitBodies` on the whole app) @defaultValue none
   */
  bodyBudget?: BodyBudget;
  /**
   * the app already closes the connection of an answer sent before its body arrived
   * (`closeUnreadBodies` on the whole app, as the server's buildApp does) @defaultValue false
   */
  appClosesUnreadBodies?: boolean;
  /** @defaultValue NO_TRACING */
  tracing?: Tracing;
}

const EMPTY = Buffer.alloc(0);

function rawBody(request: FastifyRequest): Buffer {
  return Buffer.isBuffer(request.body) ? request.body : EMPTY;
}

/**
 * A batch envelope nesting too deep or holding a prototype-poisoning key is refused
 * whole (its events are checked one by one).
 */
function refuseBadEnvelope(body: unknown): void {
  if (body === null || typeof body !== "object" || Array.isArray(body)) return;
  const { events: _events, ...envelope } = body as Record<string, unknown>;
  const scan = scanEvent(envelope);
  if (scan.tooDeep) {
    throw invalidEvent('a batch body is {"events": [...]}', [
      { path: scan.tooDeep, message: `nested deeper than ${MAX_JSON_DEPTH} levels` },
    ]);
  }
  const path = scan.poisoned ? poisonedPath(envelope) : null;
  if (path) {
    throw invalidEvent("body holds a forbidden key", [
      { path, message: "forbidden key (__proto__ or constructor.prototype)" },
    ]);
  }
}

/** `{"status", "event"}` for one outcome, or the error it is. */
function single(reply: FastifyReply, outcome: IngestResult) {
  if (outcome.status === "rejected") throw outcome.error;
  return reply
    .code(outcome.status === "accepted" ? 202 : 200)
    .type("application/json; charset=utf-8")
    .send(encodeSingleAnswer(outcome));
}

/** The span attributes of a batch's outcomes. */
function batchCounts(outcomes: IngestResult[]): Record<string, number> {
  const counts = { accepted: 0, duplicate: 0, rejected: 0 };
  for (const o of outcomes) counts[o.status]++;
  return {
    "rendezvous.ingest.accepted": counts.accepted,
    "rendezvous.ingest.duplicate": counts.duplicate,
    "rendezvous.ingest.rejected": counts.rejected,
  };
}

/** The producer routes. Register with `app.register(ingestRoutes, { store, config })`. */
export const ingestRoutes: FastifyPluginAsync<IngestRoutesOptions> = async (app, opts) => {
  const { store, config } = opts;
  const now = opts.now ?? Date.now;
  const metrics = opts.metrics ?? createMetrics();
  const logger = (opts.logger ?? createLogger()).child({ system: "ingest" });
  const credentials: CredentialIndex = opts.credentials ?? indexCredentials(config);
  const validator = new EventValidator(config);
  if (opts.directory) {
    const directory = opts.directory;
    validator.follow(directory.view.eventTypes);
    directory.onChange((view, change) => {
      if (change !== null && change.eventTypes.size === 0) return;
      try {
        validator.follow(view.eventTypes);
      } catch (err) {
        // the registry refuses a schema that does not compile; one stored anyway keeps its old version
        logger.error({ err: (err as Error).message }, "payload schema of the registry does not compile");
      }
    });
  }
  // (the limiters run on Redis TIME unless a test fixes the clock)
  const quotas = new QuotaGate(store, metrics, opts.now);
  const ingest = new ProducerIngest({ store, validator, metrics, logger, maxPayloadBytes: config.maxPayloadBytes });
  const tracing = opts.tracing ?? NO_TRACING;
  /** the span in which a request's events are accepted (their context is its): none when not tracing */
  const ingestSpan = (request: FastifyRequest, producer: ProducerIdentity, events: number) =>
    childSpan(request, tracing, "rendezvous.ingest", "producer", {
      "messaging.system": "rendezvous",
      "messaging.operation.type": "send",
      "messaging.operation.name": "ingest",
      "messaging.batch.message_count": events,
      "rendezvous.tenant": producer.tenant,
      "rendezvous.producer": producer.producer,
    });

  // Raw bytes for every content type (this context only): we verify, then parse. The same
  // parser under `application/json` too: fastify caches the parser it found for a named
  // type, but looks the catch-all up anew (a content-type parse, three map look-ups) on
  // every request, ~5 % of a single event's CPU in the api.
  app.removeAllContentTypeParsers();
  const asBytes = (_req: unknown, body: Buffer, done: (err: null, body: Buffer) => void) => done(null, body);
  app.addContentTypeParser("application/json", { parseAs: "buffer" }, asBytes);
  app.addContentTypeParser("*", { parseAs: "buffer" }, asBytes);

  // The declared size, then the credential, from the headers, before the body is read
  // (fastify reads it after `onRequest`): a caller that names no producer of ours is
  // refused at no cost.
  app.decorateRequest("producerHeaders", null);
  app.addHook("onRequest", (request, reply, done) => {
    if (request.method !== "POST") return done();
    const declared = Number(request.headers["content-length"]);
    if (declared > (request.routeOptions.bodyLimit ?? Number.POSITIVE_INFINITY)) {
      // as fastify's own 413: closed after the answer, unless `lingerAfterTooLarge` keeps it
      void reply.header("connection", "close");
      throw new RendezvousError("payload_too_large");
    }
    // (the socket: a kept-alive connection's key is digested once, see auth.ts presentedOn)
    (request as unknown as { producerHeaders: ProducerHeaders }).producerHeaders = authenticateProducerHeaders(
      credentials,
      request.headers,
      now(),
      request.raw.socket ?? undefined,
    );
    done(); // a throw above is fastify's to answer (a callback hook: no promise per request)
  });
  if (!opts.appClosesUnreadBodies) closeUnreadBodies(app);
  if (opts.bodyBudget) limitBodies(app, opts.bodyBudget);

  app.setErrorHandler((err, request, reply) => {
    const producerRoute = request.method === "POST";
    const apiError = toApiError(err, producerRoute);
    const aborted = clientAborted(request);
    if (aborted) {
      // the client's doing, and nobody is left to read the answer
      logger.debug({ url: request.url, method: request.method, code: apiError.code }, "client aborted the request");
    } else if (apiError.code === "unavailable") {
      logger.warn(
        { err: (err as Error).message, reason: apiError.details.reason, url: request.url },
        "store unavailable",
      );
    } else if (apiError.statusCode >= 500) {
      logger.error({ err, url: request.url, method: request.method }, "ingest request failed");
    }
    if (aborted) {
      if (producerRoute) metrics.eventsRejected.inc({ reason: apiError.code, tenant: verifiedTenant(request) });
    } else if (apiError.code === "unauthorized" || apiError.code === "payload_too_large") {
      if (producerRoute) metrics.eventsRejected.inc({ reason: apiError.code, tenant: UNKNOWN_TENANT });
      // the claimed producer is no secret; the credential headers are never logged
      logger.debug({ code: apiError.code, claimed: request.headers["rendezvous-producer"] }, "request refused");
    }
    lingerAfterTooLarge(apiError, request, reply);
    return sendApiError(reply, apiError);
  });

  /** The tenant of the producer whose headers verified (a configured one), else UNKNOWN_TENANT. */
  function verifiedTenant(request: FastifyRequest): string {
    const checked = (request as unknown as { producerHeaders: ProducerHeaders | null }).producerHeaders;
    return checked?.identity.tenant ?? UNKNOWN_TENANT;
  }

  /** The producer whose headers `onRequest` verified, once the body verifies too. */
  function authenticate(request: FastifyRequest): ProducerIdentity {
    const checked = (request as unknown as { producerHeaders: ProducerHeaders | null }).producerHeaders;
    if (!checked) throw new RendezvousError("unauthorized");
    return verifyProducerBody(checked, rawBody(request));
  }

  /**
   * The tenant's quotas and the producer's own rate, held in Redis (rate-limit.ts);
   * undefined when none is set (nothing to wait for).
   */
  function limit(producer: ProducerIdentity, count: number): Promise<void> | undefined {
    return quotas.producer(producer, count);
  }

  app.post(
    "/v1/events",
    { bodyLimit: config.maxPayloadBytes, schema: publishEventSchema, ...DOCUMENTED_ONLY },
    async (request, reply) => {
      const producer = authenticate(request);
      const body = parseJsonBody(rawBody(request));
      const limited = limit(producer, 1);
      if (limited) await limited;
      const span = ingestSpan(request, producer, 1);
      const outcome = await inSpan(span, async () => {
        const o = await ingest.single(producer, body, spanTrace(span, request));
        span?.setAttributes({ "rendezvous.ingest.status": o.status });
        return o;
      });
      return single(reply, outcome);
    },
  );

  const batchLimit = config.maxPayloadBytes * MAX_BATCH;
  app.post(
    "/v1/events/batch",
    { bodyLimit: batchLimit, schema: publishEventsSchema, ...DOCUMENTED_ONLY },
    async (request, reply) => {
      const producer = authenticate(request);
      const body = parseJsonBody(rawBody(request));
      refuseBadEnvelope(body);
      const events = (body as { events?: unknown } | null)?.events;
      const limited = limit(producer, Array.isArray(events) ? Math.min(Math.max(events.length, 1), MAX_BATCH) : 1);
      if (limited) await limited;
      const span = ingestSpan(request, producer, Array.isArray(events) ? events.length : 0);
      const outcomes = await inSpan(span, async () => {
        const o = await ingest.batch(producer, body, spanTrace(span, request));
        span?.setAttributes(batchCounts(o));
        return o;
      });
      // Bytes, not a string: given a string, the reply would measure its UTF-8 length and
      // the socket would encode it again.
      return reply.code(200).type("application/json; charset=utf-8").send(encodeBatchAnswer(outcomes));
    },
  );

  // The id is a wildcard: a parametric segment is capped by the server's maxParamLength
  // (100 by default), and an id may be 200 characters, more once URL-encoded.
  app.get<{ Params: { producer: string; "*": string }; Querystring: { tenant?: unknown } }>(
    "/v1/events/:producer/*",
    { schema: getEventSchema, ...DOCUMENTED_ONLY },
    async (request, reply) => {
      const identity = authenticateHost(credentials, request.headers);
      const tenant = readTenant(identity, request.query.tenant, config.tenants);
      await quotas.host(tenant, false);
      const { producer, "*": eventId } = request.params;
      if (!Name.safeParse(producer).success || eventId.length < 1 || eventId.length > 200) {
        throw new RendezvousError("not_found");
      }
      const event = await store.getEvent(tenant, producer, eventId);
      if (!event) throw new RendezvousError("not_found");
      return reply.code(200).send({ event });
    },
  );
};
