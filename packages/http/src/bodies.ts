/**
 * The request-body budget of the HTTP server (docs/api.md, Credentials before bodies):
 * every body in flight is counted against a per-process budget and its client's share,
 * answers given before a body was read close their connection, and the bytes held are
 * a gauge on /metrics.
 */
import type { Config } from "@rendezvous/engine";
import type { FastifyInstance } from "fastify";
import { Gauge, type Registry } from "prom-client";
import { BodyBudget, type BodyBudgetOptions, limitBodies } from "./body-budget.js";
import { MAX_BATCH } from "./producers/ingest.js";
import { closeUnreadBodies } from "./unread-body.js";

/** The body limit of every route but the producer routes (fastify's `bodyLimit`). */
export const HOST_BODY_LIMIT = 1024 * 1024;

/** A client address's share of a budget when none is configured: a quarter of it. */
export const defaultPerClient = (totalBytes: number): number => Math.floor(totalBytes / 4);

const DEFAULT_TOTAL = 64 * 1024 * 1024;
export const DEFAULT_BODY_BUDGET: BodyBudgetOptions = {
  totalBytes: DEFAULT_TOTAL,
  perClientBytes: defaultPerClient(DEFAULT_TOTAL),
};

/**
 * The budget a config can live with: neither the total nor a client's share is below
 * the largest body a route accepts (500 × maxPayloadBytes for a batch), so any request
 * that fits its route still passes when the server is not loaded.
 */
export function effectiveBodyBudget(
  opts: BodyBudgetOptions,
  config: Pick<Config, "maxPayloadBytes">,
): BodyBudgetOptions {
  const largest = Math.max(HOST_BODY_LIMIT, config.maxPayloadBytes * MAX_BATCH);
  const totalBytes = Math.max(opts.totalBytes, largest);
  // the BodyBudget holds a share to its total
  return { totalBytes, perClientBytes: Math.max(opts.perClientBytes, largest) };
}

const GAUGE = "rendezvous_http_body_bytes";

/**
 * Installs the budget on the whole app. Call before any route or plugin is registered
 * (the hooks must reach every route); credentials checked in a route's `onRequest`
 * still come first.
 */
export function limitRequestBodies(app: FastifyInstance, budget: BodyBudget, registry: Registry): void {
  closeUnreadBodies(app);
  limitBodies(app, budget);
  registry.removeSingleMetric(GAUGE);
  new Gauge({
    name: GAUGE,
    help: "Bytes of request bodies held in memory now, counted against the body budget",
    registers: [registry],
    collect() {
      this.set(budget.held);
    },
  });
}

export { BodyBudget };
