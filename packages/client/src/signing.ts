import { createHmac } from "node:crypto";

/**
 * The `Rendezvous-Signature` header for a raw body:
 * `t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<raw body>")>`.
 */
export function signatureHeader(secret: string, rawBody: string, nowMs: number = Date.now()): string {
  const t = Math.floor(nowMs / 1000);
  const v1 = createHmac("sha256", secret).update(`${t}.`).update(rawBody).digest("hex");
  return `t=${t},v1=${v1}`;
}
