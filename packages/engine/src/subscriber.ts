/**
 * Connections for SUBSCRIBE (the registry's change channel).
 *
 * On a single Redis this is an ioredis connection: it reconnects with the capped backoff of
 * redis.ts and subscribes its channels again by itself.
 *
 * On a Redis Cluster it is a plain connection to one node at a time, not ioredis's cluster
 * subscriber: a PUBLISH reaches every node of a cluster, so any node will do, and when the
 * connection closes another node is tried after a capped backoff. ioredis's own cluster
 * subscriber (6.0) picks a new node at once on every close, with no delay: with every node
 * down a role spun above one core and grew by about 1 GB a minute (docs/operations.md,
 * "Redis Cluster").
 */
import { EventEmitter } from "node:events";
import { Redis, type RedisOptions } from "ioredis";
import { createBlockingRedis, parseRedisUrl } from "./redis.js";

/** What a subscribe-only connection offers: its channels' messages, errors, and closing. */
export interface Subscriber {
  on(event: "message", listener: (channel: string, message: string) => void): unknown;
  on(event: "error", listener: (err: Error) => void): unknown;
  subscribe(...channels: string[]): Promise<unknown>;
  /** "ready" while connected and subscribed through a node; "end" once closed */
  readonly status: string;
  quit(): Promise<unknown>;
  disconnect(): void;
}

export interface NodeAddress {
  host: string;
  port: number;
}

/** First delay before another node is tried, ms; doubled per failed try up to SUBSCRIBER_MAX_DELAY_MS. */
export const SUBSCRIBER_FIRST_DELAY_MS = 100;
export const SUBSCRIBER_MAX_DELAY_MS = 5000;

/**
 * A cluster subscriber: one plain connection at a time to a node from `nodes()` (the
 * command connection's current view, or the seeds), its channels subscribed again on
 * each new connection. Messages published while no node was reachable are missed; the
 * registry's poll is there for that.
 */
export class NodeSubscriber extends EventEmitter implements Subscriber {
  readonly #nodes: () => NodeAddress[];
  readonly #options: RedisOptions;
  readonly #channels = new Set<string>();
  #conn: Redis | undefined;
  #failures = 0;
  #timer: NodeJS.Timeout | undefined;
  #closed = false;
  /** connections opened so far, the first included */
  opened = 0;

  constructor(nodes: () => NodeAddress[], options: RedisOptions) {
    super();
    this.#nodes = nodes;
    this.#options = options;
    this.#open();
  }

  get status(): string {
    if (this.#closed) return "end";
    return this.#conn?.status ?? "reconnecting";
  }

  /** `host:port` of the node subscribed through (or being connected to) */
  get node(): string | undefined {
    const o = this.#conn?.options;
    return o ? `${o.host}:${o.port}` : undefined;
  }

  subscribe(...channels: string[]): Promise<unknown> {
    for (const c of channels) this.#channels.add(c);
    if (!this.#conn || this.#conn.status === "end") return Promise.resolve(this.#channels.size);
    return this.#conn.subscribe(...channels);
  }

  async quit(): Promise<unknown> {
    this.#close();
    return this.#conn?.quit().catch(() => undefined);
  }

  disconnect(): void {
    this.#close();
    this.#conn?.disconnect();
  }

  #close(): void {
    this.#closed = true;
    clearTimeout(this.#timer);
  }

  #open(): void {
    const nodes = this.#nodes();
    const node = nodes[Math.floor(Math.random() * nodes.length)];
    if (!node) {
      this.#retry();
      return;
    }
    this.opened++;
    const conn = new Redis({
      ...this.#options,
      host: node.host,
      port: node.port,
      // this class moves to another node instead
      retryStrategy: () => null,
      maxRetriesPerRequest: null,
      autoResubscribe: false,
    });
    this.#conn = conn;
    conn.on("message", (channel: string, message: string) => this.emit("message", channel, message));
    conn.on("error", (err: Error) => {
      if (this.listenerCount("error") > 0) this.emit("error", err);
    });
    conn.on("ready", () => {
      this.#failures = 0;
    });
    conn.once("end", () => {
      if (conn === this.#conn && !this.#closed) this.#retry();
    });
    if (this.#channels.size > 0) conn.subscribe(...this.#channels).catch(() => undefined);
  }

  #retry(): void {
    if (this.#closed) return;
    const delay = Math.min(SUBSCRIBER_FIRST_DELAY_MS * 2 ** this.#failures, SUBSCRIBER_MAX_DELAY_MS);
    this.#failures++;
    this.#timer = setTimeout(() => this.#open(), delay);
  }
}

/**
 * A subscribe-only connection for `url`. On a cluster, `nodes` names the nodes to pick
 * from (the command connection's current view); the URL's seeds when it names none.
 */
export function createSubscriber(url: string, opts: { name?: string; nodes?: () => NodeAddress[] } = {}): Subscriber {
  const target = parseRedisUrl(url);
  if (target.kind === "single") return createBlockingRedis(url, { name: opts.name });
  const seeds = target.nodes;
  const nodes = () => {
    const known = opts.nodes?.() ?? [];
    return known.length > 0 ? known : seeds;
  };
  return new NodeSubscriber(nodes, {
    connectionName: opts.name,
    username: target.username,
    password: target.password,
    ...(target.tls ? { tls: {} } : {}),
  });
}
