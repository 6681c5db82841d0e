/**
 * The memory request bodies may hold, per process (docs/api.md, Credentials before
 * bodies): a body is held in memory whole before it is verified and parsed, so the
 * bytes of every body in flight are counted against a budget, and each client address
 * against its share of it. Beyond either, the request is answered `503 unavailable`
 * (`reason: "body_budget"`, `Retry-After`) without its body being read, and its
 * connection is closed.
 *
 * A declared `Content-Length` is reserved whole before any byte is read; a chunked
 * body is counted as its bytes arrive. What a request holds is given back when its
 * response closes: answered, refused, or the client gone.
 */
import type { Socket } from "node:net";
import { Transform, type TransformCallback } from "node:stream";
import { RendezvousError } from "@rendezvous/protocol";
import type { FastifyInstance, FastifyRequest } from "fastify";
import ipaddr from "ipaddr.js";

export interface BodyBudgetOptions {
  /** most body bytes held by all requests together */
  totalBytes: number;
  /** most body bytes held by the requests of one client address (IPv6: one /64) */
  perClientBytes: number;
}

/** Seconds a client refused by the budget is told to wait. */
export const BODY_BUDGET_RETRY_AFTER_SEC = 1;

/** Body bytes held by requests in flight, in total and by client. */
export class BodyBudget {
  readonly totalBytes: number;
  readonly perClientBytes: number;
  #held = 0;
  readonly #byClient = new Map<string, number>();

  constructor(opts: BodyBudgetOptions) {
    this.totalBytes = opts.totalBytes;
    this.perClientBytes = Math.min(opts.perClientBytes, opts.totalBytes);
  }

  /** Bytes held now, by every request. */
  get held(): number {
    return this.#held;
  }

  /** Bytes held now by one client's requests. */
  heldBy(client: string): number {
    return this.#byClient.get(client) ?? 0;
  }

  /** Clients holding bytes now. */
  get clients(): number {
    return this.#byClient.size;
  }

  /** Takes `bytes` for `client` when both the process and the client's share have room. */
  take(client: string, bytes: number): boolean {
    const mine = this.heldBy(client);
    if (this.#held + bytes > this.totalBytes || mine + bytes > this.perClientBytes) return false;
    this.#held += bytes;
    this.#byClient.set(client, mine + bytes);
    return true;
  }

  /** Gives back bytes taken for `client`. */
  give(client: string, bytes: number): void {
    this.#held -= bytes;
    const left = this.heldBy(client) - bytes;
    if (left > 0) this.#byClient.set(client, left);
    else this.#byClient.delete(client);
  }
}

/**
 * The key a client address is counted under, by the body budget's share and the server's
 * per-address connection limit alike: an IPv4 address (mapped or not) as it is, an IPv6 one
 * by its /64 (one subscriber's block).
 */
export function clientKey(address: string | undefined): string {
  if (!address) return "unknown";
  try {
    const ip = ipaddr.process(address);
    if (ip.kind() === "ipv4") return ip.toString();
    const parts = (ip as ipaddr.IPv6).parts.slice(0, 4);
    return `${parts.map((p) => p.toString(16)).join(":")}::/64`;
  } catch {
    return address;
  }
}

const keyOfSocket = new WeakMap<Socket, string>();

/**
 * {@link clientKey} of a socket's remote address, worked out once per connection: every
 * request of a kept-alive connection asks for it.
 */
export function socketClientKey(socket: Socket): string {
  let key = keyOfSocket.get(socket);
  if (key === undefined) {
    key = clientKey(socket.remoteAddress);
    keyOfSocket.set(socket, key);
  }
  return key;
}

function overBudget(): RendezvousError {
  return new RendezvousError("unavailable", "too many request bodies in flight; retry later", {
    reason: "body_budget",
    retryAfter: BODY_BUDGET_RETRY_AFTER_SEC,
  });
}

/** What one request holds of the budget; given back once, when its response closes. */
class Hold {
  #bytes = 0;
  #released = false;

  constructor(
    private readonly budget: BodyBudget,
    private readonly client: string,
  ) {}

  get bytes(): number {
    return this.#bytes;
  }

  take(bytes: number): boolean {
    if (this.#released || !this.budget.take(this.client, bytes)) return false;
    this.#bytes += bytes;
    return true;
  }

  readonly release = (): void => {
    if (this.#released) return;
    this.#released = true;
    if (this.#bytes > 0) this.budget.give(this.client, this.#bytes);
    this.#bytes = 0;
  };
}

/**
 * A chunked body, counted against the budget as it passes. Bytes past the route's
 * bound are not counted (fastify answers those 413) and are dropped, so a client still
 * writing after its 413 is read and discarded, not held.
 */
class CountedBody extends Transform {
  constructor(
    private readonly hold: Hold,
    private readonly bound: number,
  ) {
    super();
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, done: TransformCallback): void {
    const room = this.bound + 1 - this.hold.bytes;
    if (room <= 0) done();
    else if (!this.hold.take(Math.min(chunk.length, room))) done(overBudget());
    else done(null, chunk);
  }
}

/** Whether a request has a body to read (a positive Content-Length, or chunked). */
function bodyLength(request: FastifyRequest): number | "chunked" | null {
  if (request.headers["transfer-encoding"] !== undefined) return "chunked";
  const declared = Number(request.headers["content-length"]);
  return declared > 0 ? declared : null;
}

/**
 * Counts every request body of `app` (and its children) against `budget`. Register
 * before the routes, and after any hook that refuses a request from its headers
 * (credentials are checked in `onRequest`; this runs in `preParsing`, after them).
 */
export function limitBodies(app: FastifyInstance, budget: BodyBudget): void {
  // a callback hook, not an async one: it runs on every request with a body
  app.addHook("preParsing", (request, reply, payload, done) => {
    const length = bodyLength(request);
    if (length === null || reply.raw.destroyed) return done(null, payload);
    const hold = new Hold(budget, socketClientKey(request.socket));
    reply.raw.once("close", hold.release);
    const bound = request.routeOptions.bodyLimit ?? Number.POSITIVE_INFINITY;
    if (length !== "chunked") {
      // over the bound: answered 413 before it is read
      if (length <= bound && !hold.take(length)) return done(overBudget());
      return done(null, payload);
    }
    const counted = new CountedBody(hold, bound);
    payload.on("error", (err) => counted.destroy(err));
    counted.on("error", () => payload.unpipe(counted));
    done(null, payload.pipe(counted));
  });
}
