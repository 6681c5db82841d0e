/**
 * Request tracing (docs/api.md, Tracing): with tracing on, every request is an HTTP server
 * span, child of its `traceparent`; the routes carry on `requestTrace(request)`: that span's
 * context, or, with tracing off, the context the request's headers name (only read, never
 * recorded).
 */
import { type TraceCarrier, type TraceSpan, type Tracing, traceCarrierOf } from "@rendezvous/engine";
import type { FastifyInstance, FastifyRequest } from "fastify";
import { methodOf, routeOf } from "./http-metrics.js";

const SPAN = Symbol("rendezvous.traceSpan");

type Traced = FastifyRequest & { [SPAN]?: TraceSpan };

/** The trace context the request's headers name (undefined: none, or malformed). */
export function headerTrace(request: FastifyRequest): TraceCarrier | undefined {
  const tp = request.headers.traceparent;
  return tp === undefined ? undefined : traceCarrierOf(tp, request.headers.tracestate);
}

/** The context to keep with what the request stores: its server span's, else its headers'. */
export function requestTrace(request: FastifyRequest): TraceCarrier | undefined {
  return (request as Traced)[SPAN]?.carrier ?? headerTrace(request);
}

/** The request's server span when the process traces (undefined when it does not). */
export function requestSpan(request: FastifyRequest): TraceSpan | undefined {
  return (request as Traced)[SPAN];
}

/**
 * A span of the request's work (child of its server span), or undefined when the process
 * does not trace; what the request stores then carries `spanTrace(span, request)`.
 */
export function childSpan(
  request: FastifyRequest,
  tracing: Tracing,
  name: string,
  kind: "producer" | "consumer" | "internal",
  attributes: Record<string, string | number | boolean>,
): TraceSpan | undefined {
  if (!tracing.enabled) return undefined;
  return tracing.start(name, { kind, parent: requestTrace(request), attributes });
}

/**
 * The span of a consume (`POST /v1/waits/{id}/consume`, or a claim with `consume: true`):
 * the end of a continuation's trace. Undefined when the process does not trace.
 */
export function consumeSpan(
  tracing: Tracing,
  parent: TraceCarrier | undefined,
  tenant: string,
  waitId: string,
  links?: ReadonlyArray<TraceCarrier | undefined>,
): TraceSpan | undefined {
  if (!tracing.enabled) return undefined;
  return tracing.start("rendezvous.consume", {
    kind: "consumer",
    parent,
    links,
    attributes: {
      "messaging.system": "rendezvous",
      "messaging.operation.type": "settle",
      "messaging.operation.name": "consume",
      "messaging.message.id": waitId,
      "rendezvous.wait.id": waitId,
      ...(tenant ? { "rendezvous.tenant": tenant } : {}),
    },
  });
}

/** The context to keep: the span's when there is one, else the request's. */
export function spanTrace(span: TraceSpan | undefined, request: FastifyRequest): TraceCarrier | undefined {
  return span?.carrier ?? requestTrace(request);
}

/** Runs `work` in `span` (if any): fails it on a throw, ends it either way. */
export async function inSpan<T>(span: TraceSpan | undefined, work: () => Promise<T>): Promise<T> {
  if (!span) return work();
  try {
    return await work();
  } catch (err) {
    span.fail(err);
    throw err;
  } finally {
    span.end();
  }
}

/**
 * One server span per request, from `onRequest` to `onResponse` (route pattern as its name,
 * never the URL's query). Installs nothing when tracing is off. Call before the routes.
 */
export function traceRequests(app: FastifyInstance, tracing: Tracing): void {
  if (!tracing.enabled) return;
  app.addHook("onRequest", (request, _reply, done) => {
    const route = routeOf(request);
    const method = methodOf(request);
    (request as Traced)[SPAN] = tracing.start(`${method} ${route}`, {
      kind: "server",
      parent: headerTrace(request),
      attributes: { "http.request.method": method, "http.route": route, "url.scheme": "http" },
    });
    done();
  });
  app.addHook("onResponse", (request, reply, done) => {
    const span = (request as Traced)[SPAN];
    if (span) {
      span.setAttributes({ "http.response.status_code": reply.statusCode });
      if (reply.statusCode >= 500) span.fail(new Error(`answered ${reply.statusCode}`));
      span.end();
    }
    done();
  });
  app.addHook("onRequestAbort", (request, done) => {
    const span = (request as Traced)[SPAN];
    if (span) {
      span.setAttributes({ "rendezvous.client_aborted": true });
      span.end();
    }
    done();
  });
}
