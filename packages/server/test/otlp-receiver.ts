/**
 * A local OTLP/HTTP trace receiver for tests: accepts `POST /v1/traces` with JSON bodies
 * (what the roles' OTLP exporter sends with `OTEL_EXPORTER_OTLP_PROTOCOL=http/json`) and
 * keeps every span with its resource's `service.name`.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";

export interface ReceivedSpan {
  service: string;
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  kind: number;
  startNs: bigint;
  endNs: bigint;
  attributes: Record<string, unknown>;
  links: Array<{ traceId: string; spanId: string }>;
}

/** OTLP JSON ids are hex; a base64 one (as protobuf JSON mapping writes them) is turned to hex. */
function hexId(id: unknown, hexLength: number): string {
  const s = String(id ?? "");
  if (s === "") return "";
  if (s.length === hexLength && /^[0-9a-f]+$/i.test(s)) return s.toLowerCase();
  return Buffer.from(s, "base64").toString("hex");
}

function attributesOf(list: unknown): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const a of (list as Array<{ key: string; value: Record<string, unknown> }>) ?? []) {
    const v = a.value ?? {};
    out[a.key] = v.stringValue ?? v.intValue ?? v.boolValue ?? v.doubleValue ?? v;
  }
  return out;
}

export interface OtlpReceiver {
  /** the traces endpoint (`http://127.0.0.1:<port>/v1/traces`) */
  readonly url: string;
  readonly spans: ReceivedSpan[];
  /** requests that were not `POST /v1/traces` with a JSON body */
  readonly refused: number;
  close(): Promise<void>;
}

export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const spans: ReceivedSpan[] = [];
  let refused = 0;
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const json = String(req.headers["content-type"] ?? "").includes("application/json");
      if (req.method !== "POST" || req.url !== "/v1/traces" || !json) {
        refused++;
        res.writeHead(415).end();
        return;
      }
      const body = JSON.parse(Buffer.concat(chunks).toString()) as {
        resourceSpans?: Array<{
          resource?: { attributes?: unknown };
          scopeSpans?: Array<{ spans?: Array<Record<string, unknown>> }>;
        }>;
      };
      for (const rs of body.resourceSpans ?? []) {
        const service = String(attributesOf(rs.resource?.attributes)["service.name"] ?? "");
        for (const ss of rs.scopeSpans ?? []) {
          for (const s of ss.spans ?? []) {
            spans.push({
              service,
              traceId: hexId(s.traceId, 32),
              spanId: hexId(s.spanId, 16),
              parentSpanId: hexId(s.parentSpanId, 16),
              name: String(s.name),
              kind: Number(s.kind),
              startNs: BigInt(String(s.startTimeUnixNano ?? 0)),
              endNs: BigInt(String(s.endTimeUnixNano ?? 0)),
              attributes: attributesOf(s.attributes),
              links: ((s.links as Array<Record<string, unknown>>) ?? []).map((l) => ({
                traceId: hexId(l.traceId, 32),
                spanId: hexId(l.spanId, 16),
              })),
            });
          }
        }
      }
      res.writeHead(200, { "content-type": "application/json" }).end("{}");
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/v1/traces`,
    spans,
    get refused() {
      return refused;
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
