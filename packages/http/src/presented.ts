/**
 * The digests of a presented credential token (auth.ts): its plain SHA-256 and its HMAC under
 * the registry's secret key, kept per connection while it presents the same token.
 */
import { hash } from "node:crypto";

/** One-shot digest: no Hash object (a stream) per request. */
export const sha256 = (value: string | Buffer): Buffer => hash("sha256", value, "buffer");

/** The presented token's digests: plain SHA-256, and the HMAC under the secret key when there is one. */
export interface Presented {
  readonly sha: Buffer;
  readonly mac: Buffer;
}

function presentedDigests(token: string, mac: ((text: string) => string) | undefined): Presented {
  const sha = sha256(token);
  return { sha, mac: mac ? Buffer.from(mac(token), "hex") : sha };
}

type Mac = ((text: string) => string) | undefined;
/** Per connection (its socket): the last token it presented, the digest function then, the digests. */
const lastPresented = new WeakMap<object, { token: string; mac: Mac; presented: Presented }>();

/**
 * The token's digests, computed once per connection while it presents the same token under the
 * same `mac`: a kept-alive client sends the same key every time, and the two digests were a tenth
 * of a single event's CPU in the api. Only digests of the caller's own text are kept, never
 * whether they matched: each request is still matched against the index of now, so a revoked,
 * disabled or expired key is refused from the next request on. Kept as long as the connection.
 */
export function presentedOn(conn: object | undefined, token: string, mac: Mac): Presented {
  if (conn === undefined) return presentedDigests(token, mac);
  const last = lastPresented.get(conn);
  if (last !== undefined && last.token === token && last.mac === mac) return last.presented;
  const presented = presentedDigests(token, mac);
  lastPresented.set(conn, { token, mac, presented });
  return presented;
}
