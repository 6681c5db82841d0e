/**
 * Completion tokens (docs/api.md, "Completion tokens, failure and heartbeats"): the text
 * "rt1~<waitId>~<secret>", the secret 32 random bytes in base64url. The wait id names the
 * wait (and so its partition); the server keeps only a hash of the whole token in the
 * wait record (field tk, lua/includes/tokens.lua): its SHA-256, the first 128 bits in
 * base64url (22 characters; finding a token to a stored hash is a 2^128 search).
 */
import { createHash, randomBytes } from "node:crypto";

const VERSION = "rt1";
const SECRET = /^[A-Za-z0-9_-]{43}$/;
/** a wait id's characters ([A-Za-z0-9._-]); "~" never occurs in one */
const WAIT_ID = /^[A-Za-z0-9._-]{1,200}$/;

/** The hash stored for a token. */
export function tokenHash(token: string): string {
  return createHash("sha256").update(token).digest("base64url").slice(0, 22);
}

/** A new token for the wait, and its hash. */
export function newToken(waitId: string): { value: string; hash: string } {
  const value = `${VERSION}~${waitId}~${randomBytes(32).toString("base64url")}`;
  return { value, hash: tokenHash(value) };
}

/** The wait id a token names and the token's hash, or null for text that is no token. */
export function parseToken(value: string): { waitId: string; hash: string } | null {
  if (value.length > 100) return null;
  const parts = value.split("~");
  if (parts.length !== 3 || parts[0] !== VERSION) return null;
  const [, waitId = "", secret = ""] = parts;
  if (!WAIT_ID.test(waitId) || !SECRET.test(secret)) return null;
  return { waitId, hash: tokenHash(value) };
}
