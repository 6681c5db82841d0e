/**
 * Completion tokens and heartbeats (docs/api.md, "Completion tokens, failure and
 * heartbeats"): complete or fail a wait through its token, rotate a wait's token, and
 * heartbeats by the host or through the token. A token names its wait by the wait id
 * (which names the partition); each operation is one Lua transition on that partition.
 */

import { RendezvousError, type Wait } from "@rendezvous/protocol";
import { encodeParts } from "../encoding.js";
import type { EngineContext } from "../engine-context.js";
import { newToken, parseToken } from "../formats/completion-token.js";
import { completeByTokenCall, completeByTokenResult } from "../transitions/completeByToken.js";
import { heartbeatWaitCall, heartbeatWaitResult } from "../transitions/heartbeatWait.js";
import { rotateTokenCall, rotateTokenResult } from "../transitions/rotateToken.js";

export { newToken } from "../formats/completion-token.js";

/** How a token completion ends the wait. */
export type TokenCompletion =
  | { outcome: "success"; payload?: Record<string, unknown> }
  | { outcome: "failure"; error: Record<string, unknown> };

/** @throws RendezvousError invalid_request for a heartbeatMs over maxTimeoutMs */
export function checkHeartbeatMs(heartbeatMs: number | undefined, maxTimeoutMs: number): void {
  if (heartbeatMs !== undefined && heartbeatMs > maxTimeoutMs) {
    throw new RendezvousError("invalid_request", "heartbeatMs exceeds maxTimeoutMs", {
      issues: [{ path: ["heartbeatMs"], message: `at most ${maxTimeoutMs}` }],
    });
  }
}

function tenantPrefix(tenant: string | null): string {
  return tenant === null ? "" : encodeParts(tenant);
}

export class TokensSystem {
  constructor(private readonly ctx: EngineContext) {}

  /** The wait a token names and its hash. @throws RendezvousError token_invalid */
  #named(token: string): { waitId: string; hash: string } {
    const parsed = parseToken(token);
    if (parsed === null || this.ctx.keys.waitPartition(parsed.waitId) === null) {
      throw new RendezvousError("token_invalid");
    }
    return parsed;
  }

  /** The wait id a token names, or null when it is no token (for rate limits; nothing is read). */
  tokenWaitId(token: string): string | null {
    return parseToken(token)?.waitId ?? null;
  }

  /**
   * Completes or fails the wait the token names (single use).
   * @throws RendezvousError token_invalid, not_waiting, deadline_passed
   */
  async completeByToken(token: string, how: TokenCompletion): Promise<Wait> {
    const { waitId, hash } = this.#named(token);
    const reply = await this.ctx.run(
      completeByTokenCall(this.ctx.partitionOf(waitId), {
        waitId,
        tokenHash: hash,
        outcome: how.outcome,
        payload: how.outcome === "success" && how.payload !== undefined ? JSON.stringify(how.payload) : undefined,
        error: how.outcome === "failure" ? JSON.stringify(how.error) : undefined,
        retentionMs: this.ctx.config.retentionMs,
        now: this.ctx.now(),
      }),
    );
    return completeByTokenResult(waitId, reply);
  }

  /**
   * A heartbeat through the token: the wait's deadline becomes now + heartbeatMs.
   * @throws RendezvousError token_invalid, not_waiting, deadline_passed, heartbeat_disabled
   */
  async heartbeatByToken(token: string): Promise<Wait> {
    const { waitId, hash } = this.#named(token);
    const reply = await this.ctx.run(
      heartbeatWaitCall(this.ctx.partitionOf(waitId), {
        waitId,
        tenantPrefix: "",
        tokenHash: hash,
        now: this.ctx.now(),
      }),
    );
    return heartbeatWaitResult(waitId, reply, true);
  }

  /**
   * A heartbeat by the host (tenant null = admin).
   * @throws RendezvousError not_found, not_waiting, deadline_passed, heartbeat_disabled
   */
  async heartbeat(tenant: string | null, waitId: string): Promise<Wait> {
    const reply = await this.ctx.run(
      heartbeatWaitCall(this.ctx.partitionOf(waitId), {
        waitId,
        tenantPrefix: tenantPrefix(tenant),
        now: this.ctx.now(),
      }),
    );
    return heartbeatWaitResult(waitId, reply, false);
  }

  /**
   * A new token for a waiting wait; the previous one is invalid from then on.
   * @throws RendezvousError not_found, not_waiting
   */
  async rotateToken(tenant: string | null, waitId: string): Promise<{ wait: Wait; token: string }> {
    const partition = this.ctx.partitionOf(waitId);
    const token = newToken(waitId);
    const reply = await this.ctx.run(
      rotateTokenCall(partition, {
        waitId,
        tenantPrefix: tenantPrefix(tenant),
        tokenHash: token.hash,
        now: this.ctx.now(),
      }),
    );
    return { wait: rotateTokenResult(waitId, reply), token: token.value };
  }
}
