/**
 * Host routes of completion tokens and heartbeats (docs/api.md, "Completion tokens,
 * failure and heartbeats"): rotate a wait's token, a heartbeat by the host. Registered
 * inside the host routes (their credential hook applies).
 */

import type { Resources } from "@rendezvous/engine";
import { errorResponses, HeartbeatBody, RotateTokenResponse, WaitResponse } from "@rendezvous/protocol";
import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import { z } from "zod";
import type { HostIdentity } from "./auth.js";
import { followDeadline, issuedToken } from "./token-routes.js";

export interface WaitTokenRoutesOptions {
  res: Resources;
  scheduleTimeout?: (deadlineMs: number) => Promise<unknown>;
}

const WaitId = z.object({ id: z.string().max(200) });
const errors = errorResponses(400, 401, 404, 409, 413, 503);

export const waitTokenRoutes: FastifyPluginAsyncZod<WaitTokenRoutesOptions> = async (app, opts) => {
  const { res } = opts;
  const acting = (request: unknown): string | null => {
    const identity = (request as { identity: HostIdentity }).identity;
    return identity.kind === "host" ? identity.tenant : null;
  };

  app.post(
    "/v1/waits/:id/token",
    {
      schema: {
        operationId: "rotateToken",
        tags: ["waits"],
        summary: "Issue a new completion token for a waiting wait (the previous one is invalid)",
        params: WaitId,
        response: { 200: RotateTokenResponse, ...errors },
      },
    },
    async (request) => {
      const { wait, token } = await res.store.rotateToken(acting(request), request.params.id);
      return { wait, token: issuedToken(res.config.publicUrl, token) };
    },
  );

  app.post(
    "/v1/waits/:id/heartbeat",
    {
      schema: {
        operationId: "heartbeatWait",
        tags: ["waits"],
        summary: "A heartbeat by the host: deadline = now + heartbeatMs",
        params: WaitId,
        body: HeartbeatBody,
        response: { 200: WaitResponse, ...errors },
      },
    },
    async (request) => {
      const wait = await res.store.heartbeat(acting(request), request.params.id);
      await followDeadline(res, opts.scheduleTimeout, wait.deadline);
      return { wait };
    },
  );
};
