/**
 * Tracing: the one home of OpenTelemetry in rendezvous. Off unless the standard `OTEL_*`
 * variables ask for it (docs/api.md, Tracing); off, nothing of OpenTelemetry is loaded and
 * `NO_TRACING` answers every call with nothing. On, `startTracing` loads the SDK (a lazy
 * import), exports spans over OTLP/HTTP (JSON), and every role starts its spans here, with
 * parents and links given as W3C trace contexts (what the records and entries carry), not
 * as in-process contexts: a span's context crosses processes only through those carriers.
 */

import type { Attributes, Span, SpanContext, Tracer } from "@opentelemetry/api";
import type { TraceCarrier } from "./formats/trace-context.js";
import { traceCarrierOf } from "./formats/trace-context.js";
import type { Logger } from "./logger.js";

export type SpanKindName = "server" | "client" | "producer" | "consumer" | "internal";

export interface TraceSpanOptions {
  /** @defaultValue "internal" */
  kind?: SpanKindName;
  /** the parent context; none: a root span */
  parent?: TraceCarrier | undefined;
  /** contexts linked to (absent ones are skipped) */
  links?: ReadonlyArray<TraceCarrier | undefined>;
  attributes?: Attributes;
  /** epoch ms @defaultValue now */
  startTime?: number;
}

/** A span being recorded: its context to carry on, its attributes, its end. */
export interface TraceSpan {
  /** the span's own context (W3C), to carry to the next process */
  readonly carrier: TraceCarrier | undefined;
  setAttributes(attributes: Attributes): void;
  addLinks(links: ReadonlyArray<TraceCarrier | undefined>): void;
  /** marks the span failed (status error, the exception's type and message) */
  fail(err: unknown): void;
  end(): void;
}

export interface Tracing {
  /** spans are recorded and exported */
  readonly enabled: boolean;
  /** the process's `service.name` */
  readonly serviceName: string;
  start(name: string, opts?: TraceSpanOptions): TraceSpan;
  /** exports what is buffered and stops */
  shutdown(): Promise<void>;
}

const NOOP_SPAN: TraceSpan = {
  carrier: undefined,
  setAttributes() {},
  addLinks() {},
  fail() {},
  end() {},
};

/** Tracing off: every span is a no-op with no context. */
export const NO_TRACING: Tracing = {
  enabled: false,
  serviceName: "",
  start: () => NOOP_SPAN,
  shutdown: async () => {},
};

type Env = Record<string, string | undefined>;

/** Whether the `OTEL_*` variables turn tracing on (docs/api.md, Tracing). */
export function tracingWanted(env: Env = process.env): boolean {
  if ((env.OTEL_SDK_DISABLED ?? "").trim().toLowerCase() === "true") return false;
  const exporters = (env.OTEL_TRACES_EXPORTER ?? "")
    .split(",")
    .map((e) => e.trim().toLowerCase())
    .filter((e) => e !== "");
  if (exporters.includes("none")) return false;
  if (exporters.includes("otlp")) return true;
  return Boolean(env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim() || env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim());
}

/** Where spans go: the traces endpoint, else the base endpoint + /v1/traces, else the local default. */
export function tracesUrl(env: Env = process.env): string {
  const traces = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim();
  if (traces) return traces;
  const base = env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim();
  if (base) return `${base.replace(/\/+$/, "")}/v1/traces`;
  return "http://localhost:4318/v1/traces";
}

/**
 * Tracing for a process of `role` (`api`, `matcher`, …, `start`): `NO_TRACING` unless the
 * environment asks for it, else the SDK, loaded now. `service.name` is `OTEL_SERVICE_NAME`,
 * by default `rendezvous-<role>`.
 */
export async function startTracing(role: string, logger?: Logger, env: Env = process.env): Promise<Tracing> {
  if (!tracingWanted(env)) return NO_TRACING;
  const protocol = (env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL ?? env.OTEL_EXPORTER_OTLP_PROTOCOL ?? "http/json").trim();
  if (protocol !== "http/json") {
    logger?.warn({ protocol }, "tracing: only OTLP/HTTP with JSON bodies (http/json) is sent; using it");
  }
  const [api, sdk, exporterPkg, resources] = await Promise.all([
    import("@opentelemetry/api"),
    import("@opentelemetry/sdk-trace-node"),
    import("@opentelemetry/exporter-trace-otlp-http"),
    import("@opentelemetry/resources"),
  ]);
  const serviceName = env.OTEL_SERVICE_NAME?.trim() || `rendezvous-${role}`;
  // the SDK's defaults, then OTEL_RESOURCE_ATTRIBUTES, then the service name
  const resource = resources
    .defaultResource()
    .merge(resources.detectResources({ detectors: [resources.envDetector] }))
    .merge(resources.resourceFromAttributes({ "service.name": serviceName }));
  const provider = new sdk.NodeTracerProvider({
    resource,
    spanProcessors: [new sdk.BatchSpanProcessor(new exporterPkg.OTLPTraceExporter({ url: tracesUrl(env) }))],
  });
  // the global provider, propagator and context manager: a library that traces by
  // itself (BullMQ's telemetry) finds them
  provider.register();
  const tracer = provider.getTracer("rendezvous");
  logger?.info({ serviceName, url: tracesUrl(env) }, "tracing on: spans exported over OTLP/HTTP");
  return new OtelTracing(api, tracer, serviceName, () => provider.shutdown());
}

type Api = typeof import("@opentelemetry/api");

const KINDS: Record<SpanKindName, number> = { internal: 0, server: 1, client: 2, producer: 3, consumer: 4 };

class OtelTracing implements Tracing {
  readonly enabled = true;

  constructor(
    private readonly api: Api,
    private readonly tracer: Tracer,
    readonly serviceName: string,
    private readonly stop: () => Promise<void>,
  ) {}

  start(name: string, opts: TraceSpanOptions = {}): TraceSpan {
    const { api } = this;
    const parent = this.#spanContext(opts.parent);
    const ctx = parent ? api.trace.setSpanContext(api.ROOT_CONTEXT, parent) : api.ROOT_CONTEXT;
    const span = this.tracer.startSpan(
      name,
      {
        kind: KINDS[opts.kind ?? "internal"],
        attributes: opts.attributes,
        links: this.#links(opts.links),
        startTime: opts.startTime,
        root: !parent,
      },
      ctx,
    );
    return new OtelSpan(span, this.api, (c) => this.#links(c));
  }

  shutdown(): Promise<void> {
    return this.stop();
  }

  #spanContext(carrier: TraceCarrier | undefined): SpanContext | undefined {
    if (!carrier) return undefined;
    // a carrier is well formed (traceCarrierOf made it); read it again all the same
    const c = traceCarrierOf(carrier.traceparent, carrier.tracestate);
    if (!c) return undefined;
    const [, traceId = "", spanId = "", flags = "00"] = c.traceparent.split("-");
    return {
      traceId,
      spanId,
      traceFlags: Number.parseInt(flags, 16) & 1,
      isRemote: true,
      traceState: c.tracestate ? this.api.createTraceState(c.tracestate) : undefined,
    };
  }

  #links(carriers: ReadonlyArray<TraceCarrier | undefined> | undefined): Array<{ context: SpanContext }> {
    const out: Array<{ context: SpanContext }> = [];
    for (const c of carriers ?? []) {
      const context = this.#spanContext(c);
      if (context) out.push({ context });
    }
    return out;
  }
}

class OtelSpan implements TraceSpan {
  readonly carrier: TraceCarrier | undefined;

  constructor(
    private readonly span: Span,
    private readonly api: Api,
    private readonly links: (c: ReadonlyArray<TraceCarrier | undefined>) => Array<{ context: SpanContext }>,
  ) {
    const sc = span.spanContext();
    if (api.isSpanContextValid(sc)) {
      const flags = (sc.traceFlags & 0xff).toString(16).padStart(2, "0");
      const state = sc.traceState?.serialize();
      this.carrier = { traceparent: `00-${sc.traceId}-${sc.spanId}-${flags}`, ...(state ? { tracestate: state } : {}) };
    }
  }

  setAttributes(attributes: Attributes): void {
    this.span.setAttributes(attributes);
  }

  addLinks(carriers: ReadonlyArray<TraceCarrier | undefined>): void {
    const links = this.links(carriers);
    if (links.length > 0) this.span.addLinks(links);
  }

  fail(err: unknown): void {
    const error = err instanceof Error ? err : new Error(String(err));
    this.span.setStatus({ code: this.api.SpanStatusCode.ERROR, message: error.message });
    this.span.setAttribute("error.type", (error as { code?: unknown }).code?.toString() ?? error.name);
  }

  end(): void {
    this.span.end();
  }
}
