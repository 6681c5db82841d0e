/**
 * The access log: one pino line per answered request (`RENDEZVOUS_ACCESS_LOG`: `on` every
 * request, `errors` those answered 5xx and up to ERRORS_4XX_PER_SEC a second of those answered
 * 4xx, `off` none). A line holds what the request was
 * and who made it, never a credential, a header value or a body: the method, the route
 * pattern (not the URL: a query string is the caller's), the status, the duration, the
 * bytes in and out as declared by content-length, the client address, the request id, and
 * the tenant and producer or host the credential proved (none for a refused credential).
 */
import type { FastifyBaseLogger, FastifyReply, FastifyRequest } from "fastify";
import type { ProducerHeaders } from "./auth.js";

export const ACCESS_LOG_MODES = ["on", "errors", "off"] as const;
export type AccessLogMode = (typeof ACCESS_LOG_MODES)[number];

/** The line's fields (docs/operations.md, "Access log"). */
export interface AccessLine {
  reqId: string;
  method: string;
  route: string;
  status: number;
  /** arrival → answer sent, ms (two decimals) */
  ms: number;
  /** request body bytes as declared (content-length), when declared */
  bytesIn?: number;
  /** answer bytes (content-length), when known */
  bytesOut?: number;
  /** the socket's remote address */
  client: string | undefined;
  tenant?: string;
  producer?: string;
  /** the admin token was the credential */
  admin?: true;
}

interface Identified {
  producerHeaders?: ProducerHeaders | null;
  identity?: { kind: "host"; tenant: string } | { kind: "admin" } | null;
}

function declaredBytes(value: unknown): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  return Number.isSafeInteger(n) && n >= 0 ? n : undefined;
}

/** The line of one answered request. */
export function accessLine(request: FastifyRequest, reply: FastifyReply, route: string, method: string): AccessLine {
  const status = reply.statusCode;
  const line: AccessLine = {
    reqId: String(request.id),
    method,
    route,
    status,
    ms: Math.round(reply.elapsedTime * 100) / 100,
    client: request.socket?.remoteAddress,
  };
  const bytesIn = declaredBytes(request.headers["content-length"]);
  if (bytesIn !== undefined) line.bytesIn = bytesIn;
  const bytesOut = declaredBytes(reply.getHeader("content-length"));
  if (bytesOut !== undefined) line.bytesOut = bytesOut;
  // a 401 names no one: the headers may have named a producer whose signature then failed
  if (status !== 401) {
    const who = request as unknown as Identified;
    const producer = who.producerHeaders?.identity;
    if (producer) {
      line.tenant = producer.tenant;
      line.producer = producer.producer;
    } else if (who.identity?.kind === "host") line.tenant = who.identity.tenant;
    else if (who.identity?.kind === "admin") line.admin = true;
  }
  return line;
}

/**
 * 4xx lines `errors` writes per second at most: a client can make refusals (401, 413, 429) as
 * fast as it sends, and the log must not become its amplifier. `on` writes every line.
 */
export const ERRORS_4XX_PER_SEC = 100;

export class AccessLog {
  readonly #logger: FastifyBaseLogger;
  readonly #errorsOnly: boolean;
  readonly #now: () => number;
  #second = 0;
  #written4xx = 0;
  #skipped4xx = 0;

  constructor(logger: FastifyBaseLogger, mode: Exclude<AccessLogMode, "off">, now: () => number = Date.now) {
    // Without the root's redaction (a wildcard path walk per line, ~8 of ~11 µs): the line is
    // built from the fields above only, none of them a credential, a header or a body.
    this.#logger = logger.child({ system: "access" }, { redact: [] });
    this.#errorsOnly = mode === "errors";
    this.#now = now;
  }

  write(request: FastifyRequest, reply: FastifyReply, route: string, method: string): void {
    const status = reply.statusCode;
    if (this.#errorsOnly) {
      if (status < 400) return;
      if (status < 500 && !this.#take4xx()) return;
    }
    this.#logger.info(accessLine(request, reply, route, method), "request");
  }

  /** Whether this second still has room for a 4xx line (says what the last second skipped). */
  #take4xx(): boolean {
    const second = Math.floor(this.#now() / 1000);
    if (second !== this.#second) {
      if (this.#skipped4xx > 0) {
        this.#logger.warn(
          { skipped4xx: this.#skipped4xx },
          `access log: 4xx lines over ${ERRORS_4XX_PER_SEC}/s skipped`,
        );
      }
      this.#second = second;
      this.#written4xx = 0;
      this.#skipped4xx = 0;
    }
    if (this.#written4xx < ERRORS_4XX_PER_SEC) {
      this.#written4xx++;
      return true;
    }
    this.#skipped4xx++;
    return false;
  }
}
