/**
 * Completion tokens, failure and heartbeats on the wire (docs/api.md, "Completion tokens,
 * failure and heartbeats"): the token as issued, the token routes' bodies and answers.
 */
import { z } from "zod";
import { FailureError, InputObject, Wait } from "./schemas.js";

/** A completion token as issued (shown once): its value, and its complete URL when `publicUrl` is set. */
export const IssuedToken = z
  .object({ value: z.string(), url: z.string().optional() })
  .meta({ id: "IssuedToken", description: "a completion token, shown once; the server keeps only its hash" });
export type IssuedToken = z.infer<typeof IssuedToken>;

/** `POST /v1/waits`: `{"wait"}`, plus `token` on a 201 that asked for one. */
export const RegisterResponse = z
  .object({ wait: Wait, token: IssuedToken.optional() })
  .meta({ id: "RegisterResponse" });

/** `POST /v1/waits/{id}/token`: the new token (the previous one is invalid). */
export const RotateTokenResponse = z.object({ wait: Wait, token: IssuedToken }).meta({ id: "RotateTokenResponse" });

/** `POST /v1/tokens/{token}/complete` body. */
export const CompleteByToken = z.strictObject({ payload: InputObject.optional() }).meta({ id: "CompleteByToken" });
export type CompleteByToken = z.infer<typeof CompleteByToken>;

/** `POST /v1/tokens/{token}/fail` body. */
export const FailByToken = z.strictObject({ error: FailureError }).meta({ id: "FailByToken" });
export type FailByToken = z.infer<typeof FailByToken>;

/** A heartbeat's body: none or `{}`. */
export const HeartbeatBody = z.strictObject({}).nullish().meta({ id: "HeartbeatRequest" });

/** What a token holder is told: the wait id and its state, never the wait itself. */
export const TokenResult = z
  .object({ waitId: z.string(), state: z.literal("resolved"), outcome: z.enum(["success", "failure"]) })
  .meta({ id: "TokenResult" });
export type TokenResult = z.infer<typeof TokenResult>;

/** `POST /v1/tokens/{token}/heartbeat`: the new deadline. */
export const TokenHeartbeatResult = z
  .object({ waitId: z.string(), deadline: z.string() })
  .meta({ id: "TokenHeartbeatResult" });
export type TokenHeartbeatResult = z.infer<typeof TokenHeartbeatResult>;
