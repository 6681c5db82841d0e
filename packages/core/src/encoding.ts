import { createHash } from "node:crypto";
import canonicalize from "canonicalize";

/**
 * Length-prefixed encoding of a tuple of strings: "<bytes>:<value>" per part.
 * Prefix-free: a full encoding is never a proper prefix of another full encoding
 * of the same arity, so lexical ranges over "<encoding>…" select exactly one tuple.
 */
export function encodeParts(...parts: string[]): string {
  let out = "";
  for (const part of parts) out += `${Buffer.byteLength(part)}:${part}`;
  return out;
}

/** Inverse of {@link encodeParts}. */
export function decodeParts(encoded: string, count: number): string[] {
  const buf = Buffer.from(encoded);
  const parts: string[] = [];
  let pos = 0;
  for (let i = 0; i < count; i++) {
    const colon = buf.indexOf(0x3a, pos);
    if (colon < 0) throw new Error("malformed encoded key");
    const len = Number(buf.subarray(pos, colon).toString());
    parts.push(buf.subarray(colon + 1, colon + 1 + len).toString());
    pos = colon + 1 + len;
  }
  return parts;
}

/** FNV-1a, 32 bit: the stable hash that places a match key in a partition. */
export function fnv1a32(value: string): number {
  let hash = 0x811c9dc5;
  for (const byte of Buffer.from(value)) {
    hash ^= byte;
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash >>> 0;
}

/** Base64url digest, cut to `length` characters. */
export function digest(value: string, length: number): string {
  return createHash("sha256").update(value).digest("base64url").slice(0, length);
}

/** Canonical JSON (RFC 8785): equal content gives equal text. */
export function canonicalJson(value: unknown): string {
  return canonicalize(value) ?? "null";
}
