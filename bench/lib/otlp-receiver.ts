/**
 * A local OTLP/HTTP trace receiver for the benches (docs/benchmarks.md, "Tracing off and on"):
 * `node:http` on a free loopback port, `POST /v1/traces` answered `200 {}` (an empty
 * ExportTraceServiceResponse), counting the export requests, their bytes and the spans in
 * them (`resourceSpans[].scopeSpans[].spans[]` of each JSON body; a body that is not JSON,
 * e.g. protobuf, is counted as unparsed). It keeps nothing else.
 */
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";

export interface OtlpCounts {
  requests: number;
  bytes: number;
  spans: number;
  /** requests whose body was not OTLP JSON */
  unparsed: number;
}

export interface OtlpReceiver {
  /** the traces endpoint, for OTEL_EXPORTER_OTLP_TRACES_ENDPOINT */
  endpoint: string;
  counts(): OtlpCounts;
  close(): Promise<void>;
}

interface ExportBody {
  resourceSpans?: Array<{ scopeSpans?: Array<{ spans?: unknown[] }> }>;
}

function spansIn(body: ExportBody): number {
  let n = 0;
  for (const r of body.resourceSpans ?? []) for (const s of r.scopeSpans ?? []) n += s.spans?.length ?? 0;
  return n;
}

export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const counts: OtlpCounts = { requests: 0, bytes: 0, spans: 0, unparsed: 0 };
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      if (req.method !== "POST" || !req.url?.startsWith("/v1/traces")) {
        res.writeHead(404).end();
        return;
      }
      const body = Buffer.concat(chunks);
      counts.requests += 1;
      counts.bytes += body.length;
      try {
        counts.spans += spansIn(JSON.parse(body.toString("utf8")) as ExportBody);
      } catch {
        counts.unparsed += 1;
      }
      res.writeHead(200, { "content-type": "application/json" }).end("{}");
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    endpoint: `http://127.0.0.1:${port}/v1/traces`,
    counts: () => ({ ...counts }),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
