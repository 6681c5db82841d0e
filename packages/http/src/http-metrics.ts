/**
 * HTTP request metrics of a process: a counter by route, method and status, and a duration
 * histogram by route and method. Every label value is bounded: the route is the pattern the
 * request matched (`/v1/waits/:id`), `unmatched` when it matched none; the method one of the
 * standard ones or `other`; the status three digits.
 */
import type { FastifyReply, FastifyRequest } from "fastify";
import { Counter, Histogram, type Registry } from "prom-client";

/** The `route` label of a request no route matched (a 404, a URL refused before routing). */
export const UNMATCHED_ROUTE = "unmatched";

const METHODS = new Set(["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]);

/** Seconds: 0.5 ms to 10 s (long polls of up to 30 s land in +Inf). */
const DURATION_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/** The route pattern a request matched, or {@link UNMATCHED_ROUTE}. */
export function routeOf(request: FastifyRequest): string {
  // a 404 runs in the not-found handler's context, whose url is not a route pattern
  if (request.is404) return UNMATCHED_ROUTE;
  return request.routeOptions.url ?? UNMATCHED_ROUTE;
}

/** The request's method as a bounded label value. */
export function methodOf(request: FastifyRequest): string {
  return METHODS.has(request.method) ? request.method : "other";
}

/** The request counter's name (the console's overview reads it too). */
export const REQUESTS = "rendezvous_http_requests_total";
const DURATION = "rendezvous_http_request_duration_seconds";

export class HttpMetrics {
  readonly #requests: Counter<"route" | "method" | "status">;
  readonly #duration: Histogram<"route" | "method">;

  /** The registry's request metrics, registered by the first app built on it. */
  constructor(registry: Registry) {
    const on = { registers: [registry] };
    this.#requests =
      (registry.getSingleMetric(REQUESTS) as Counter<"route" | "method" | "status"> | undefined) ??
      new Counter({
        name: REQUESTS,
        help: "HTTP requests answered, by route pattern, method and status",
        labelNames: ["route", "method", "status"],
        ...on,
      });
    this.#duration =
      (registry.getSingleMetric(DURATION) as Histogram<"route" | "method"> | undefined) ??
      new Histogram({
        name: DURATION,
        help: "Time from a request's arrival to its answer sent, by route pattern and method",
        labelNames: ["route", "method"],
        buckets: DURATION_BUCKETS,
        ...on,
      });
  }

  /** Counts one answered request (route and method as {@link routeOf} and {@link methodOf}). */
  record(route: string, method: string, reply: FastifyReply): void {
    this.#requests.inc({ route, method, status: String(reply.statusCode) });
    this.#duration.observe({ route, method }, reply.elapsedTime / 1000);
  }
}
