/** When the OTEL_* variables turn tracing on, and where spans go (docs/api.md, Tracing). */
import { describe, expect, it } from "vitest";
import { NO_TRACING, startTracing, tracesUrl, tracingWanted } from "../src/index.js";

describe("tracing configuration", () => {
  it("is off unless an OTLP exporter or endpoint is named; none or OTEL_SDK_DISABLED wins", () => {
    expect(tracingWanted({})).toBe(false);
    expect(tracingWanted({ OTEL_SERVICE_NAME: "x" })).toBe(false);
    expect(tracingWanted({ OTEL_TRACES_EXPORTER: "otlp" })).toBe(true);
    expect(tracingWanted({ OTEL_TRACES_EXPORTER: "console, otlp" })).toBe(true);
    expect(tracingWanted({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://c:4318" })).toBe(true);
    expect(tracingWanted({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "http://c:4318/v1/traces" })).toBe(true);
    expect(tracingWanted({ OTEL_EXPORTER_OTLP_ENDPOINT: "  " })).toBe(false);
    expect(tracingWanted({ OTEL_TRACES_EXPORTER: "none", OTEL_EXPORTER_OTLP_ENDPOINT: "http://c:4318" })).toBe(false);
    expect(tracingWanted({ OTEL_SDK_DISABLED: "true", OTEL_TRACES_EXPORTER: "otlp" })).toBe(false);
  });

  it("sends to the traces endpoint, else the base endpoint's /v1/traces, else localhost:4318", () => {
    expect(
      tracesUrl({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "http://a/x", OTEL_EXPORTER_OTLP_ENDPOINT: "http://b" }),
    ).toBe("http://a/x");
    expect(tracesUrl({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://b:4318/" })).toBe("http://b:4318/v1/traces");
    expect(tracesUrl({})).toBe("http://localhost:4318/v1/traces");
  });

  it("off: NO_TRACING, whose spans carry no context", async () => {
    const tracing = await startTracing("api", undefined, {});
    expect(tracing).toBe(NO_TRACING);
    const span = tracing.start("x", {
      parent: { traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01" },
    });
    expect(span.carrier).toBeUndefined();
  });
});
