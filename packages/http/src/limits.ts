/**
 * Connection-level limits of the HTTP server (docs/operations.md, Limits): a cap on
 * open connections and on those of one client address (enforced by `guardConnections`,
 * ./connections.ts), a short keep-alive timeout, a deadline for the headers and for the
 * whole request (slowloris headers and bodies are cut off), a header size limit, and the
 * answer to a request the HTTP parser refuses, in the API error shape.
 */
import { type ServerOptions, STATUS_CODES } from "node:http";
import type { Socket } from "node:net";
import type { FastifyServerOptions } from "fastify";

export interface HttpLimits {
  /** most open connections; at the cap the idlest is closed for a newcomer @defaultValue 4096 */
  maxConnections: number;
  /** most open connections of one client address @defaultValue a quarter of maxConnections */
  maxConnectionsPerAddress: number;
  /** time an idle keep-alive connection is kept between requests @defaultValue 5000 */
  keepAliveTimeoutMs: number;
  /** time to send the request line and headers @defaultValue 10000 */
  headersTimeoutMs: number;
  /** time to send the whole request, body included @defaultValue 30000 */
  requestTimeoutMs: number;
  /** largest request line + headers in bytes @defaultValue 16384 */
  maxHeaderBytes: number;
}

/** The per-address limit when none is set: a quarter of the cap, so one address cannot take it all. */
export function defaultPerAddress(maxConnections: number): number {
  return Math.max(1, Math.floor(maxConnections / 4));
}

export const DEFAULT_HTTP_LIMITS: HttpLimits = {
  maxConnections: 4096,
  maxConnectionsPerAddress: defaultPerAddress(4096),
  keepAliveTimeoutMs: 5000,
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

/** Fastify options enforcing the limits (the connection caps are `guardConnections`'). */
export function limitOptions(limits: HttpLimits): Pick<
  FastifyServerOptions,
  "requestTimeout" | "keepAliveTimeout" | "clientErrorHandler"
> & {
  http: ServerOptions;
} {
  const headersTimeout = Math.min(limits.headersTimeoutMs, limits.requestTimeoutMs);
  return {
    requestTimeout: limits.requestTimeoutMs,
    // Fastify's default is 72 s. Node arms it as the socket's inactivity timer once a response
    // is done (plus 1 s of its own, so a client trusting `Keep-Alive: timeout=N` does not race
    // the close) and disarms it when the next request's headers are complete. The headers
    // timeout of that next request counts from its first byte (Node >= 18), so the two do not
    // race: an idle socket goes after the keep-alive timeout, a trickling one after the headers
    // timeout.
    keepAliveTimeout: limits.keepAliveTimeoutMs,
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
