/**
 * Trace continuation through the optional peer `@opentelemetry/api` (docs/api.md, "Tracing in
 * the client"). The API is loaded once, with `import()`, the first time a request or a
 * continuation needs it; when it is not installed every function here passes through and the
 * client sends exactly what it sends without it. Nothing here registers a provider, a context
 * manager or a propagator: that is the host's OpenTelemetry setup, and without one the API's
 * no-op implementations answer.
 *
 * The types of the API stay in this module and out of the client's public declarations, so a
 * host without the package type-checks as before.
 */
import type { Context, Span } from "@opentelemetry/api";

type OtelApi = typeof import("@opentelemetry/api");

/** The tracer's name (instrumentation scope) of the client's spans. */
export const TRACER_NAME = "@rendezvous/client";

let loading: Promise<OtelApi | null> | undefined;

/** The OpenTelemetry API when it is installed, else null; loaded once. */
export function otel(): Promise<OtelApi | null> {
  loading ??= import("@opentelemetry/api").then(
    (m) => m,
    () => null,
  );
  return loading;
}

/** Adds the active context to `headers` (`traceparent`, `tracestate`: whatever the registered propagator writes). */
export function injectActive(api: OtelApi | null, headers: Record<string, string>): void {
  if (api) api.propagation.inject(api.context.active(), headers);
}

/** A trace context as it travels with a continuation: the W3C header values. */
export interface Carrier {
  traceparent?: string;
  tracestate?: string;
}

/**
 * The carrier of a BullMQ job: `opts.telemetry.metadata`, the JSON text bullmq-otel's
 * `getMetadata` writes (`{"traceparent": …, "tracestate"?: …}`); undefined when there is none
 * or it is not such a text.
 */
export function jobCarrier(opts: { telemetry?: { metadata?: unknown } } | undefined): Carrier | undefined {
  const metadata = opts?.telemetry?.metadata;
  if (typeof metadata !== "string") return undefined;
  try {
    const parsed: unknown = JSON.parse(metadata);
    if (typeof parsed !== "object" || parsed === null) return undefined;
    const { traceparent, tracestate } = parsed as Record<string, unknown>;
    return {
      ...(typeof traceparent === "string" && { traceparent }),
      ...(typeof tracestate === "string" && { tracestate }),
    };
  } catch {
    return undefined;
  }
}

/** What a continuation's process span is told of its outcome besides a throw. */
export interface ProcessOutcome {
  /** the handler failed (the error is reported, not thrown): the span ends with status ERROR */
  fail(err: unknown): void;
}

const NO_OUTCOME: ProcessOutcome = { fail: () => undefined };

export type SpanAttributes = Record<string, string | number>;

function failSpan(api: OtelApi, span: Span, err: unknown): void {
  if (err instanceof Error) span.recordException(err);
  span.setStatus({ code: api.SpanStatusCode.ERROR, message: err instanceof Error ? err.message : String(err) });
}

/**
 * Runs `fn` inside a consumer span `process <queue>` whose parent is the continuation's
 * carried context (a root span when it has none), ending the span when `fn` settles. Every
 * request `fn` makes carries the span (the active context). Without the API, `fn` alone.
 */
export async function inProcessSpan<T>(
  carrier: Carrier | undefined,
  queue: string,
  attributes: SpanAttributes,
  fn: (outcome: ProcessOutcome) => Promise<T>,
): Promise<T> {
  const api = await otel();
  if (!api) return fn(NO_OUTCOME);
  const parent: Context = api.propagation.extract(api.ROOT_CONTEXT, carrier ?? {});
  const span = api.trace
    .getTracer(TRACER_NAME)
    .startSpan(`process ${queue}`, { kind: api.SpanKind.CONSUMER, attributes }, parent);
  const outcome: ProcessOutcome = { fail: (err) => failSpan(api, span, err) };
  try {
    return await api.context.with(api.trace.setSpan(parent, span), () => fn(outcome));
  } catch (err) {
    failSpan(api, span, err);
    throw err;
  } finally {
    span.end();
  }
}

/** The active context, to run something in it later ({@link withContext}); undefined without the API. */
export function activeContext(api: OtelApi | null): Context | undefined {
  return api?.context.active();
}

/** Runs `fn` in `ctx` (from {@link activeContext}), or as it is without one. */
export function withContext<T>(api: OtelApi | null, ctx: Context | undefined, fn: () => T): T {
  return api && ctx ? api.context.with(ctx, fn) : fn();
}

/** Runs `fn` outside any span (the root context): a loop started inside a span stays out of its trace. */
export function detached<T>(api: OtelApi | null, fn: () => T): T {
  return api ? api.context.with(api.ROOT_CONTEXT, fn) : fn();
}
