/**
 * Maps whatever a route threw to the API error it answers with: a RendezvousError
 * as it is, fastify's body errors to API codes, Redis trouble (out of memory,
 * unreachable, too slow) to `503 unavailable` with a `reason`, anything else to a bare
 * `internal` (never the original message).
 */

import { isCommandTimeout } from "@rendezvous/engine";
import { isRendezvousError, RendezvousError } from "@rendezvous/protocol";
import type { FastifyReply, FastifyRequest } from "fastify";

/** ioredis / socket failures meaning "Redis is not reachable now". */
const UNAVAILABLE_CODES = new Set(["ECONNREFUSED", "ECONNRESET", "ETIMEDOUT", "EPIPE", "ENOTFOUND", "EHOSTUNREACH"]);
/**
 * Replies and client errors meaning Redis was not connected or refused the command
 * before running it: not connected, still loading, a replica, a cluster without a
 * quorum or a slot owner, a master refusing writes (no replicas, failed persistence),
 * busy in a script.
 */
const DOWN_MESSAGES = [
  /^Connection is closed/,
  /enableOfflineQueue options is false/,
  /^Reached the max retries per request limit/,
  /^Failed to refresh slots cache/,
  /^None of startup nodes is available/,
  /^LOADING /,
  /^READONLY /,
  /^CLUSTERDOWN /,
  /^TRYAGAIN /,
  /^MASTERDOWN /,
  /^NOREPLICAS /,
  /^MISCONF /,
  /^BUSY /,
];
/** Redis refuses a write at maxmemory (policy noeviction). */
const OOM = /^OOM /;

/** Why Redis could not serve a request: the `reason` of a `503 unavailable`. */
export type RedisTrouble = "redis_oom" | "redis_down" | "redis_timeout";

/** Seconds a client should wait before retrying, by trouble: memory is not freed in a second. */
const RETRY_AFTER_S: Record<RedisTrouble, number> = { redis_oom: 5, redis_down: 1, redis_timeout: 1 };

const TROUBLE_MESSAGE: Record<RedisTrouble, string> = {
  redis_oom: "redis is out of memory and refuses writes",
  redis_down: "redis unreachable",
  redis_timeout: "redis did not answer in time; the request may or may not have been applied",
};

/** What kind of Redis trouble an error is, if it is one. */
export function redisTrouble(err: unknown): RedisTrouble | undefined {
  if (!(err instanceof Error)) return undefined;
  if (isCommandTimeout(err)) return "redis_timeout";
  if (OOM.test(err.message)) return "redis_oom";
  const code = (err as { code?: unknown }).code;
  if (typeof code === "string" && UNAVAILABLE_CODES.has(code)) return "redis_down";
  if (err.name === "MaxRetriesPerRequestError" || err.name === "ClusterAllFailedError") return "redis_down";
  return DOWN_MESSAGES.some((re) => re.test(err.message)) ? "redis_down" : undefined;
}

/** `503 unavailable` for Redis trouble, with its `reason` and `retryAfter` (seconds). */
export function redisUnavailable(reason: RedisTrouble): RendezvousError {
  return new RendezvousError("unavailable", TROUBLE_MESSAGE[reason], { reason, retryAfter: RETRY_AFTER_S[reason] });
}

/**
 * Sends an API error. A `429` or `503` carries `Retry-After`: the error's `retryAfter`
 * detail, else 1 s.
 */
export function sendApiError(reply: FastifyReply, apiError: RendezvousError): FastifyReply {
  if (apiError.statusCode === 429 || apiError.statusCode === 503) {
    const retryAfter = apiError.details.retryAfter;
    void reply.header("retry-after", String(typeof retryAfter === "number" ? retryAfter : 1));
  }
  return reply.code(apiError.statusCode).send(apiError.toJSON());
}

/** The API error a thrown value answers with, and whether it is a server fault. */
export function toApiError(err: unknown, producerBody = true): RendezvousError {
  if (isRendezvousError(err)) return err;
  const badBody = producerBody ? "invalid_event" : "invalid_request";
  if (err instanceof Error) {
    const fst = err as Error & { code?: unknown; statusCode?: unknown };
    if (fst.code === "FST_ERR_CTP_BODY_TOO_LARGE") return new RendezvousError("payload_too_large");
    if (typeof fst.code === "string" && fst.code.startsWith("FST_ERR_CTP_")) {
      return new RendezvousError(badBody, undefined, { issues: [{ path: [], message: fst.message }] });
    }
    // Other fastify client errors (bad URL, aborted body…) are the client's fault. Before
    // the Redis test: an aborted body fails with ECONNRESET too, which is no Redis trouble.
    if (typeof fst.statusCode === "number" && fst.statusCode >= 400 && fst.statusCode < 500) {
      if (fst.statusCode === 413) return new RendezvousError("payload_too_large");
      return new RendezvousError(badBody, undefined, { issues: [{ path: [], message: fst.message }] });
    }
    const trouble = redisTrouble(err);
    if (trouble) return redisUnavailable(trouble);
  }
  return new RendezvousError("internal");
}

/** Router errors about the URL itself: it names no resource. */
const URL_NAMES_NOTHING = new Set(["FST_ERR_BAD_URL", "FST_ERR_MAX_PARAM_LENGTH"]);

/**
 * For the server's `Fastify({ frameworkErrors })`: errors raised before any route
 * runs (a malformed percent-encoding in the URL, a path segment longer than the
 * router's maxParamLength) in the API error shape. Such a URL names no resource:
 * `404 not_found`, like any malformed id.
 */
export function frameworkErrors(error: Error, _request: FastifyRequest, reply: FastifyReply): void {
  const code = (error as { code?: unknown }).code;
  const apiError =
    typeof code === "string" && URL_NAMES_NOTHING.has(code)
      ? new RendezvousError("not_found")
      : toApiError(error, false);
  void sendApiError(reply, apiError);
}

/** The most body bytes a 413 answer lets the client send after refusing them. */
const MAX_LINGER_BYTES = 64 * 1024 * 1024;

/**
 * After a 413, keeps the connection so the client reads the answer. Fastify closes
 * the connection while the client may still be writing the body: the client then
 * sees a broken pipe instead of the answer (and a retrying client tries again).
 * Like nginx's lingering close, this lets Node read and discard the rest of the
 * body instead, bounded by the request timeout and, for a declared length, by
 * MAX_LINGER_BYTES.
 */
export function lingerAfterTooLarge(apiError: RendezvousError, request: FastifyRequest, reply: FastifyReply): void {
  if (apiError.code !== "payload_too_large") return;
  const declared = Number(request.headers["content-length"] ?? Number.NaN);
  if (Number.isNaN(declared) || declared <= MAX_LINGER_BYTES) void reply.removeHeader("connection");
}
