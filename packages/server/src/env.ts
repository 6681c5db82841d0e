/**
 * The environment, parsed once at boot (docs/api.md, Starting it). A bad value stops
 * startup with the variable's name.
 */

import { DEFAULT_COMMAND_TIMEOUT_MS } from "@rendezvous/engine";
import { ACCESS_LOG_MODES, DEFAULT_BODY_BUDGET } from "@rendezvous/http";
import { RendezvousError } from "@rendezvous/protocol";
import { z } from "zod";

export const Env = z.object({
  /** config file path */
  RENDEZVOUS_CONFIG: z.string().min(1).optional(),
  /** HTTP port (RENDEZVOUS_PORT wins over PORT) */
  RENDEZVOUS_PORT: z.coerce.number().int().min(0).max(65535).optional(),
  PORT: z.coerce.number().int().min(0).max(65535).optional(),
  /** HTTP bind address @defaultValue "127.0.0.1" */
  HOST: z.string().min(1).optional(),
  /** Redis URL; absent = embedded redis-server (start only) */
  REDIS_URL: z.string().min(1).optional(),
  /**
   * Prefix of every Redis key and BullMQ queue.
   * @defaultValue "rdv"
   */
  RENDEZVOUS_PREFIX: z
    .string()
    .regex(/^[A-Za-z0-9._-]{1,64}$/)
    .default("rdv"),
  /**
   * pino level.
   * @defaultValue "info"
   */
  LOG_LEVEL: z.enum(["trace", "debug", "info", "warn", "error", "fatal", "silent"]).default("info"),
  /**
   * The access log: a line per request (`on`), per request answered 5xx and up to 100 a second answered 4xx (`errors`), or none (`off`).
   * @defaultValue "errors"
   */
  RENDEZVOUS_ACCESS_LOG: z.enum(ACCESS_LOG_MODES).default("errors"),
  /**
   * Most open HTTP connections; at the cap a new connection makes the server close its idlest
   * one (never one with a request in flight; when all have one, the new connection is closed).
   * @defaultValue 4096
   */
  RENDEZVOUS_MAX_CONNECTIONS: z.coerce.number().int().min(1).default(4096),
  /**
   * Most open HTTP connections of one client address (an IPv6 client counts by its /64);
   * beyond it a new connection from that address is closed at once.
   * @defaultValue a quarter of RENDEZVOUS_MAX_CONNECTIONS (1024)
   */
  RENDEZVOUS_MAX_CONNECTIONS_PER_ADDRESS: z.coerce.number().int().min(1).optional(),
  /**
   * Time an idle keep-alive connection is kept open between requests (Node adds 1 s).
   * @defaultValue 5000
   */
  RENDEZVOUS_KEEP_ALIVE_TIMEOUT_MS: z.coerce.number().int().min(1000).default(5000),
  /**
   * Connections the kernel may hold for the server to accept (listen backlog; the
   * kernel caps it at net.core.somaxconn). Node's default, 511, overflows under a
   * burst of connects; an overflowed handshake is retried by the kernel for up to a
   * minute, the client meanwhile seeing a connection the server has not accepted.
   * @defaultValue 4096
   */
  RENDEZVOUS_LISTEN_BACKLOG: z.coerce.number().int().min(1).default(4096),
  /**
   * Time a client has to send the request line and headers (slow headers are cut off: 408).
   * @defaultValue 10000
   */
  RENDEZVOUS_HEADERS_TIMEOUT_MS: z.coerce.number().int().min(100).default(10_000),
  /**
   * Time a client has to send a whole request, body included (slow bodies are cut off: 408).
   * @defaultValue 30000
   */
  RENDEZVOUS_REQUEST_TIMEOUT_MS: z.coerce.number().int().min(100).default(30_000),
  /**
   * Largest request line + headers in bytes (larger: 431).
   * @defaultValue 16384
   */
  RENDEZVOUS_MAX_HEADER_BYTES: z.coerce.number().int().min(1024).default(16_384),
  /**
   * Longest a Redis command of a request path waits for its answer, ms: past it the
   * request is answered `503 unavailable` (`reason: "redis_timeout"`). Blocking reads
   * (stream reads, BullMQ workers) have no such bound.
   * @defaultValue 2500
   */
  RENDEZVOUS_REDIS_COMMAND_TIMEOUT_MS: z.coerce.number().int().min(50).max(600_000).default(DEFAULT_COMMAND_TIMEOUT_MS),
  /**
   * Most bytes of request bodies held in memory at once by this process (bodies are
   * read whole before they are verified and parsed); beyond it, `503 unavailable`
   * (`reason: "body_budget"`). Never below the largest body a route accepts.
   * @defaultValue 67108864 (64 MiB)
   */
  RENDEZVOUS_BODY_BUDGET_BYTES: z.coerce
    .number()
    .int()
    .min(1024 * 1024)
    .default(DEFAULT_BODY_BUDGET.totalBytes),
  /**
   * Most of that budget the requests of one client address (IPv6: one /64) may hold.
   * Never below the largest body a route accepts. Behind a proxy every client has its
   * address: set it to the budget.
   * @defaultValue a quarter of RENDEZVOUS_BODY_BUDGET_BYTES
   */
  RENDEZVOUS_BODY_BUDGET_PER_CLIENT_BYTES: z.coerce.number().int().min(1024).optional(),
  /**
   * The registry's secret key (32 bytes: 64 hex digits or base64): encrypts HMAC and webhook
   * secrets at rest. Absent = the development key kept in Redis beside the registry
   * (development only; registry/sync.ts resolveSecretKey). Never logged.
   */
  RENDEZVOUS_SECRET_KEY: z.string().min(1).optional(),
  /**
   * How often each process reads the registry's version (the fallback of its pub/sub
   * notification), ms.
   * @defaultValue 500
   */
  RENDEZVOUS_REGISTRY_POLL_MS: z.coerce.number().int().min(50).max(60_000).default(500),
});
export type Env = z.infer<typeof Env>;

export function parseEnv(source: NodeJS.ProcessEnv = process.env): Env {
  const result = Env.safeParse(source);
  if (!result.success) {
    // the message names the variable, never its value
    const problems = result.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`);
    throw new RendezvousError("invalid_config", `invalid environment: ${problems.join("; ")}`, { problems });
  }
  return result.data;
}
