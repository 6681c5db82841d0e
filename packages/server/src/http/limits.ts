/**
 * Connection-level limits of the HTTP server (docs/operations.md, Limits): a cap on
 * open connections, a deadline for the headers and for the whole request (slowloris
 * headers and bodies are cut off), a header size limit, and the answer to a request
 * the HTTP parser refuses, in the API error shape.
 */
import { type ServerOptions, STATUS_CODES } from "node:http";
import type { Socket } from "node:net";
import type { FastifyServerOptions } from "fastify";

export interface HttpLimits {
  /** most open connections; more are closed at once @defaultValue 4096 */
  maxConnections: number;
  /** time to send the request line and headers @defaultValue 10000 */
  headersTimeoutMs: number;
  /** time to send the whole request, body included @defaultValue 30000 */
  requestTimeoutMs: number;
  /** largest request line + headers in bytes @defaultValue 16384 */
  maxHeaderBytes: number;
}

export const DEFAULT_HTTP_LIMITS: HttpLimits = {
  maxConnections: 4096,
  headersTimeoutMs: 10_000,
  requestTimeoutMs: 30_000,
  maxHeaderBytes: 16_384,
};

/** A refusal written straight to the socket: `{"error":{"code","message"}}`, then close. */
function refuse(socket: Socket, status: number, message: string): void {
  const body = JSON.stringify({ error: { code: "invalid_request", message } });
  if (socket.writable) {
    socket.write(
      `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
  }
  socket.destroy();
}

/** Fastify options enforcing the limits (the cap is set on the server: see `applyConnectionCap`). */
export function limitOptions(limits: HttpLimits): Pick<
  FastifyServerOptions,
  "requestTimeout" | "clientErrorHandler"
> & {
  http: ServerOptions;
} {
  const headersTimeout = Math.min(limits.headersTimeoutMs, limits.requestTimeoutMs);
  return {
    requestTimeout: limits.requestTimeoutMs,
    http: {
      headersTimeout,
      requestTimeout: limits.requestTimeoutMs,
      maxHeaderSize: limits.maxHeaderBytes,
      // how often Node checks those deadlines (its default, 30 s, would let a slow client linger)
      connectionsCheckingInterval: Math.max(100, Math.min(1000, Math.floor(headersTimeout / 4))),
    },
    clientErrorHandler(err: Error & { code?: string }, socket: Socket) {
      if (err.code === "ECONNRESET" || socket.destroyed) return;
      if (err.code === "ERR_HTTP_REQUEST_TIMEOUT") {
        refuse(socket, 408, "the request was not received in time");
      } else if (err.code === "HPE_HEADER_OVERFLOW") {
        refuse(socket, 431, `request headers larger than ${limits.maxHeaderBytes} bytes`);
      } else {
        refuse(socket, 400, "malformed HTTP request");
      }
    },
  };
}

/** Most levels of nesting of a payload or of wait metadata (the JSON body adds its own level): ingest's. */
export { MAX_JSON_DEPTH, nestedDeeperThan } from "@rendezvous/ingest";
