/**
 * Connection hygiene of the HTTP server (docs/api.md, Connections): a per-client-address
 * connection limit, and at the global cap the idlest connection is closed so that the new one
 * is served. Node's own cap (`server.maxConnections`) refuses newcomers instead, which lets a
 * few thousand idle sockets lock every other client out, `/healthz` and `/readyz` included.
 *
 * Every accepted socket is tracked from the server's events:
 * - `connection`: tracked as idle (it has sent nothing yet), newest in the idle order;
 * - `request` (its headers are complete): in flight until the response closes; a socket with a
 *   request in flight is never closed to make room;
 * - the response's `close` with nothing else in flight: idle again, newest in the idle order;
 * - the socket's `close`: untracked.
 *
 * Bytes are not watched with `data` listeners: one would take the socket off the HTTP parser's
 * native read path. `socket.bytesRead` (counted natively) tells at eviction time whether an idle
 * socket has started sending its next request since it went idle.
 *
 * Who is closed when a connection arrives at the cap, in order: the socket idle the longest that
 * has sent nothing since (never sent a byte, or between keep-alive requests); failing that, the
 * one idle the longest that is part-way through sending its headers (the headers timeout would
 * cut it off anyway); failing that — every connection has a request in flight — the new one.
 */
import type { Server } from "node:http";
import type { Socket } from "node:net";
import type { Logger } from "@rendezvous/engine";
import { Counter, Gauge, type Registry } from "prom-client";
import { socketClientKey } from "./body-budget.js";

export interface ConnectionLimits {
  /** most open connections of the server */
  maxConnections: number;
  /** most open connections of one client address (an IPv6 client: its /64) */
  maxConnectionsPerAddress: number;
}

/** Why the server closed a connection (the `reason` label of `rendezvous_http_connections_closed_total`). */
export type CloseReason = "idle_evicted" | "per_address_limit" | "at_cap" | "keep_alive_timeout";

interface Tracked {
  socket: Socket;
  address: string;
  /** requests whose response has not closed yet (more than one when pipelined) */
  inFlight: number;
  /** requests seen on this socket */
  requests: number;
  /** `socket.bytesRead` when it last went idle */
  bytesAtIdle: number;
}

interface ConnectionMetrics {
  open: Gauge;
  closed: Counter<"reason">;
}

/** The two connection metrics on `registry` (created once per registry). */
function connectionMetrics(registry: Registry): ConnectionMetrics {
  const open =
    (registry.getSingleMetric("rendezvous_http_connections_open") as Gauge | undefined) ??
    new Gauge({
      name: "rendezvous_http_connections_open",
      help: "Open HTTP connections",
      registers: [registry],
    });
  const closed =
    (registry.getSingleMetric("rendezvous_http_connections_closed_total") as Counter<"reason"> | undefined) ??
    new Counter({
      name: "rendezvous_http_connections_closed_total",
      help: "HTTP connections closed by the server for a connection limit, by reason",
      labelNames: ["reason"],
      registers: [registry],
    });
  return { open, closed };
}

/** How often, at most, the log says the server is closing connections for a limit. */
const LOG_EVERY_MS = 10_000;

export interface ConnectionGuard {
  /** open connections now */
  readonly open: number;
}

/**
 * Enforces `limits` on `server`. Leave `server.maxConnections` unset: Node would refuse a
 * connection at the cap before this guard sees it.
 */
export function guardConnections(
  server: Server,
  limits: ConnectionLimits,
  opts: { registry?: Registry; logger?: Logger } = {},
): ConnectionGuard {
  const tracked = new Map<Socket, Tracked>();
  /** the idle sockets, longest idle first (a Map keeps insertion order: delete + set moves to the end) */
  const idle = new Map<Socket, Tracked>();
  const perAddress = new Map<string, number>();
  const metrics = opts.registry ? connectionMetrics(opts.registry) : undefined;
  const closedSinceLog = new Map<CloseReason, number>();
  let lastLog = 0;

  function count(reason: CloseReason): void {
    metrics?.closed.inc({ reason });
    if (reason === "keep_alive_timeout") return; // routine, not worth a log line
    closedSinceLog.set(reason, (closedSinceLog.get(reason) ?? 0) + 1);
    const now = Date.now();
    if (opts.logger && now - lastLog >= LOG_EVERY_MS) {
      lastLog = now;
      opts.logger.warn(
        {
          closed: Object.fromEntries(closedSinceLog),
          open: tracked.size,
          maxConnections: limits.maxConnections,
          maxConnectionsPerAddress: limits.maxConnectionsPerAddress,
        },
        "closing connections for a connection limit",
      );
      closedSinceLog.clear();
    }
  }

  function untrack(socket: Socket): void {
    const t = tracked.get(socket);
    if (!t) return;
    tracked.delete(socket);
    idle.delete(socket);
    const n = (perAddress.get(t.address) ?? 1) - 1;
    if (n <= 0) perAddress.delete(t.address);
    else perAddress.set(t.address, n);
    metrics?.open.dec();
  }

  /** The idle socket to close for a newcomer, or none when every connection has a request in flight. */
  function idlest(): Tracked | undefined {
    let sending: Tracked | undefined;
    for (const t of idle.values()) {
      if (t.socket.bytesRead === t.bytesAtIdle) return t;
      sending ??= t;
    }
    return sending;
  }

  server.on("connection", (socket: Socket) => {
    const address = socketClientKey(socket);
    const fromAddress = perAddress.get(address) ?? 0;
    if (fromAddress >= limits.maxConnectionsPerAddress) {
      count("per_address_limit");
      socket.destroy();
      return;
    }
    if (tracked.size >= limits.maxConnections) {
      const victim = idlest();
      if (!victim) {
        count("at_cap");
        socket.destroy();
        return;
      }
      untrack(victim.socket);
      victim.socket.destroy();
      count("idle_evicted");
    }
    const t: Tracked = { socket, address, inFlight: 0, requests: 0, bytesAtIdle: socket.bytesRead };
    tracked.set(socket, t);
    idle.set(socket, t);
    perAddress.set(address, fromAddress + 1);
    metrics?.open.inc();
    socket.once("close", () => untrack(socket));
    // The socket's idle timer is only armed between keep-alive requests (server.timeout is 0),
    // so a timeout with nothing in flight is Node closing an idle keep-alive connection.
    socket.on("timeout", () => {
      if (t.inFlight === 0 && t.requests > 0 && tracked.has(socket)) count("keep_alive_timeout");
    });
  });

  server.on("request", (req, res) => {
    const t = tracked.get(req.socket);
    if (!t) return;
    t.inFlight++;
    t.requests++;
    idle.delete(t.socket);
    res.once("close", () => {
      t.inFlight--;
      if (t.inFlight > 0 || !tracked.has(t.socket)) return;
      t.bytesAtIdle = t.socket.bytesRead;
      idle.set(t.socket, t);
    });
  });

  return {
    get open() {
      return tracked.size;
    },
  };
}
