import { createHmac } from "node:crypto";
import {
  type Config,
  type ConfigInput,
  createLogger,
  createMetrics,
  createRedis,
  type Logger,
  type Metrics,
  parseConfig,
  Store,
  splitEncodings,
} from "@rendezvous/engine";
import { redisUrl, trackOpen, uniquePrefix } from "@rendezvous/testkit";
import Fastify, { type FastifyInstance, type LightMyRequestResponse } from "fastify";
import { frameworkErrors, ingestRoutes } from "../src/index.js";

export const MAX_BYTES = 2048;

/** Two tenants; acme/billing signs (two secrets: rotation) or uses a key. */
export const CONFIG: ConfigInput = {
  partitions: 4,
  adminToken: "adm_test_token",
  maxPayloadBytes: MAX_BYTES,
  tenants: {
    acme: {
      hostKeys: ["hk_acme"],
      producers: {
        billing: {
          secrets: ["whsec_old", "whsec_new"],
          keys: ["pk_billing"],
          eventTypes: ["order.paid", "job.*"],
        },
        ship: { keys: ["pk_ship"], eventTypes: ["*"] },
      },
    },
    globex: {
      hostKeys: ["hk_globex"],
      producers: { billing: { secrets: ["whsec_globex"], keys: ["pk_globex"], eventTypes: ["*"] } },
    },
  },
  eventTypes: {
    "order.paid": {
      payloadSchema: {
        type: "object",
        required: ["amount"],
        properties: { amount: { type: "number" }, currency: { type: "string", minLength: 3, maxLength: 3 } },
      },
    },
  },
};

type Redis = ReturnType<typeof createRedis>;

export interface Harness {
  app: FastifyInstance;
  store: Store;
  redis: Redis;
  prefix: string;
  config: Config;
  metrics: Metrics;
}

export async function makeApp(
  overrides: Partial<ConfigInput> = {},
  opts: { logger?: Logger; now?: () => number } = {},
): Promise<Harness> {
  const redis = createRedis(redisUrl(), { name: "ingest-test" });
  const prefix = uniquePrefix("ing");
  const config = parseConfig({ ...CONFIG, ...overrides });
  const store = new Store({ redis, prefix, config });
  const metrics = createMetrics();
  const app = Fastify({ logger: false, frameworkErrors });
  await app.register(ingestRoutes, {
    store,
    config,
    metrics,
    logger: opts.logger ?? createLogger({ level: "silent" }),
    now: opts.now,
  });
  await app.ready();
  trackOpen(app);
  trackOpen(redis);
  return { app, store, redis, prefix, config, metrics };
}

export const nowSec = (): number => Math.floor(Date.now() / 1000);

export function signature(secret: string, body: string, t = nowSec()): string {
  return `t=${t},v1=${createHmac("sha256", secret).update(`${t}.${body}`).digest("hex")}`;
}

export interface SendOptions {
  /** `Rendezvous-Producer` value @defaultValue "acme/billing" */
  producer?: string | null;
  /** bearer key; default: none when secret is given, else "pk_billing" */
  key?: string | null;
  /** sign with this secret */
  secret?: string;
  /** signature timestamp */
  t?: number;
  headers?: Record<string, string>;
}

/** POSTs a raw body to a producer route with the given credential. */
export function send(
  h: { app: Pick<FastifyInstance, "inject"> },
  url: string,
  body: unknown,
  opts: SendOptions = {},
): Promise<LightMyRequestResponse> {
  const payload = typeof body === "string" ? body : JSON.stringify(body);
  const headers: Record<string, string> = { "content-type": "application/json" };
  const producer = opts.producer === undefined ? "acme/billing" : opts.producer;
  if (producer !== null) headers["rendezvous-producer"] = producer;
  const key = opts.key === undefined ? (opts.secret ? null : "pk_billing") : opts.key;
  if (key !== null) headers.authorization = `Bearer ${key}`;
  if (opts.secret) headers["rendezvous-signature"] = signature(opts.secret, payload, opts.t);
  return h.app.inject({ method: "POST", url, payload, headers: { ...headers, ...opts.headers } });
}

export const publish = (h: { app: Pick<FastifyInstance, "inject"> }, body: unknown, opts?: SendOptions) =>
  send(h, "/v1/events", body, opts);
export const publishBatch = (h: { app: Pick<FastifyInstance, "inject"> }, events: unknown[], opts?: SendOptions) =>
  send(h, "/v1/events/batch", { events }, opts);

export function ev(id: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { id, type: "job.done", correlationId: `job-${id}`, payload: { n: id }, ...extra };
}

/** Every key of the harness's prefix. */
export async function allKeys(h: Harness): Promise<string[]> {
  const keys: string[] = [];
  let cursor = "0";
  do {
    const [next, batch] = await h.redis.scan(cursor, "MATCH", `{${h.prefix}:*`, "COUNT", 1000);
    cursor = next;
    keys.push(...batch);
  } while (cursor !== "0");
  return keys.sort();
}

/** Rejection records (`:rj` and their expiry entries in `:x`) are the only writes a refusal may leave. */
const isRejectionBookkeeping = (key: string) => key.endsWith(":rj") || key.endsWith(":x");

/**
 * The content of every key of the prefix except the capped rejection records:
 * streams, event/dedup hashes, indexes. Equal snapshots = nothing was stored.
 */
export async function snapshot(h: Harness): Promise<Record<string, unknown>> {
  const out: Record<string, unknown> = {};
  for (const key of await allKeys(h)) {
    if (isRejectionBookkeeping(key)) continue;
    const type = await h.redis.type(key);
    if (type === "stream") out[key] = await h.redis.xrange(key, "-", "+");
    else if (type === "hash") out[key] = await h.redis.hgetall(key);
    else if (type === "zset") out[key] = await h.redis.zrange(key, "0", "-1", "WITHSCORES");
    else if (type === "string") out[key] = await h.redis.get(key);
    else out[key] = type;
  }
  return out;
}

/** Number of events over every partition stream (an entry holds the events one ingest call appended to it). */
export async function streamLength(h: Harness): Promise<number> {
  let n = 0;
  for (const p of h.store.keys.allPartitions()) {
    for (const [, fields] of await h.redis.xrange(h.store.keys.partition(p).stream, "-", "+")) {
      const ks = fields[fields.indexOf("ks") + 1];
      n += fields.includes("ks") && ks !== undefined ? splitEncodings(ks, 3).length : 1;
    }
  }
  return n;
}

export function errorCode(res: LightMyRequestResponse): string | undefined {
  return (res.json() as { error?: { code?: string } }).error?.code;
}
