/**
 * The token routes (docs/api.md, "Completion tokens, failure and heartbeats"): a token
 * holder completes, fails or heartbeats a wait with the token as its only credential.
 * Each request is counted per client address, then per wait the token names, before
 * Redis is asked; a token of a disabled or deleted tenant's wait is refused as unknown;
 * answers name the wait id and state only.
 */

import { type Resources, withinCommandTimeout } from "@rendezvous/engine";
import {
  CompleteByToken,
  errorResponses,
  FailByToken,
  HeartbeatBody,
  type IssuedToken,
  RendezvousError,
  TokenHeartbeatResult,
  TokenResult,
} from "@rendezvous/protocol";
import type { FastifyRequest } from "fastify";
import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import { z } from "zod";
import { clientKey } from "./body-budget.js";
import { MAX_JSON_DEPTH, nestedDeeperThan } from "./producers/validation.js";
import { WindowLimiter } from "./token-limits.js";

export interface TokenRoutesOptions {
  res: Resources;
  /** makes sure a timeout bucket job will fire at a wait's new deadline (`TimeoutPlanner.plan`) */
  scheduleTimeout?: (deadlineMs: number) => Promise<unknown>;
}

/** An issued token as answered: its value, and its complete URL when `publicUrl` is set. */
export function issuedToken(publicUrl: string | undefined, value: string): IssuedToken {
  return publicUrl === undefined
    ? { value }
    : { value, url: `${publicUrl}/v1/tokens/${encodeURIComponent(value)}/complete` };
}

/** Plans the timeout of a wait's new deadline; a job not added is re-created by the scheduler's sweep. */
export async function followDeadline(
  res: Resources,
  scheduleTimeout: TokenRoutesOptions["scheduleTimeout"],
  deadline: string | null,
): Promise<void> {
  if (!scheduleTimeout || deadline === null) return;
  await withinCommandTimeout(res.commandTimeoutMs, scheduleTimeout(Date.parse(deadline)));
}

/** A request URL as it may be logged: a completion token in the path is a credential, so it is replaced. */
export function redactTokenUrl(url: string): string {
  return url.startsWith("/v1/tokens/") ? url.replace(/^\/v1\/tokens\/[^/?#]*/, "/v1/tokens/<token>") : url;
}

const TokenParam = z.object({ token: z.string().max(2000) });
const errors = errorResponses(400, 404, 409, 413, 429, 503);

export const tokenRoutes: FastifyPluginAsyncZod<TokenRoutesOptions> = async (app, opts) => {
  const { res } = opts;
  const { store, config } = res;
  const limiter = new WindowLimiter();

  // the rates first (nothing else is looked at for a refused request), then the nesting bound
  app.addHook("onRequest", async (request) => {
    admit(request, `a:${clientKey(request.socket.remoteAddress)}`, config.tokenRateLimitPerAddressPerSec);
    const token = (request.params as { token?: string }).token ?? "";
    const waitId = store.tokenWaitId(token);
    if (waitId !== null) {
      admit(request, `w:${waitId}`, config.tokenRateLimitPerWaitPerSec);
      await refuseInactiveTenant(waitId);
    }
  });
  /**
   * A wait of a disabled or deleted tenant: its token is refused as an unknown one (before
   * any body byte is read). The tenant of a wait never changes, so this read is no
   * read-modify-write: the transition itself stays one script.
   */
  async function refuseInactiveTenant(waitId: string): Promise<void> {
    const wait = await withinCommandTimeout(res.commandTimeoutMs, store.getWait(null, waitId));
    if (wait === null) return; // the transition answers token_invalid itself
    const tenant = res.directory.view.tenants.get(wait.tenant);
    if (tenant === undefined || tenant.disabled) throw new RendezvousError("token_invalid");
  }
  app.addHook("preValidation", async (request) => {
    if (nestedDeeperThan(request.body, MAX_JSON_DEPTH + 1)) {
      throw new RendezvousError("invalid_request", "the request does not match its schema", {
        issues: [{ path: ["body"], message: `nested deeper than ${MAX_JSON_DEPTH} levels` }],
      });
    }
  });
  function admit(_request: FastifyRequest, key: string, perSec: number): void {
    const taken = limiter.take(key, perSec);
    if (!taken.ok) throw new RendezvousError("rate_limited", undefined, { retryAfter: taken.retryAfterSec });
  }

  const common = { tags: ["tokens"], security: [], params: TokenParam };
  const bodyLimit = config.maxPayloadBytes;

  app.post(
    "/v1/tokens/:token/complete",
    {
      bodyLimit,
      schema: {
        ...common,
        operationId: "completeByToken",
        summary: "Complete a wait through its completion token (single use)",
        body: CompleteByToken.optional(),
        response: { 200: TokenResult, ...errors },
      },
    },
    async (request) => {
      const wait = await store.completeByToken(request.params.token, {
        outcome: "success",
        payload: request.body?.payload,
      });
      res.metrics.resolutions.inc({ kind: "token", tenant: wait.tenant });
      return { waitId: wait.id, state: "resolved" as const, outcome: "success" as const };
    },
  );

  app.post(
    "/v1/tokens/:token/fail",
    {
      bodyLimit,
      schema: {
        ...common,
        operationId: "failByToken",
        summary: "Fail a wait through its completion token (single use)",
        body: FailByToken,
        response: { 200: TokenResult, ...errors },
      },
    },
    async (request) => {
      const wait = await store.completeByToken(request.params.token, {
        outcome: "failure",
        error: request.body.error,
      });
      res.metrics.resolutions.inc({ kind: "token", tenant: wait.tenant });
      return { waitId: wait.id, state: "resolved" as const, outcome: "failure" as const };
    },
  );

  app.post(
    "/v1/tokens/:token/heartbeat",
    {
      bodyLimit,
      schema: {
        ...common,
        operationId: "heartbeatByToken",
        summary: "A heartbeat through a completion token: deadline = now + heartbeatMs",
        body: HeartbeatBody,
        response: { 200: TokenHeartbeatResult, ...errors },
      },
    },
    async (request) => {
      const wait = await store.heartbeatByToken(request.params.token);
      await followDeadline(res, opts.scheduleTimeout, wait.deadline);
      return { waitId: wait.id, deadline: wait.deadline as string };
    },
  );
};
