import { hash } from "node:crypto";
import canonicalize from "canonicalize";

/**
 * Length-prefixed encoding of a tuple of strings: "<bytes>:<value>" per part.
 * Prefix-free: a full encoding is never a proper prefix of another full encoding
 * of the same arity, so lexical ranges over "<encoding>…" select exactly one tuple.
 */
export function encodeParts(...parts: string[]): string {
  let out = "";
  for (const part of parts) out += `${byteLength(part)}:${part}`;
  return out;
}

/** UTF-8 byte length; ASCII (the common case) without a Buffer call. */
function byteLength(value: string): number {
  for (let i = 0; i < value.length; i++) {
    if (value.charCodeAt(i) > 0x7f) return Buffer.byteLength(value);
  }
  return value.length;
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

/**
 * Splits a concatenation of encodings of `arity` parts each (as in a stream entry's
 * `ks` field or a grouped expiry member) into those encodings.
 */
export function splitEncodings(concatenated: string, arity: number): string[] {
  const buf = Buffer.from(concatenated);
  const out: string[] = [];
  let pos = 0;
  while (pos < buf.length) {
    const start = pos;
    for (let i = 0; i < arity; i++) {
      const colon = buf.indexOf(0x3a, pos);
      if (colon < 0) throw new Error("malformed concatenated encodings");
      pos = colon + 1 + Number(buf.subarray(pos, colon).toString());
    }
    if (pos > buf.length) throw new Error("malformed concatenated encodings");
    out.push(buf.subarray(start, pos).toString());
  }
  return out;
}

/** FNV-1a, 32 bit: the stable hash that places a match key in a partition. */
export function fnv1a32(value: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < value.length; i++) {
    const c = value.charCodeAt(i);
    if (c > 0x7f) return fnv1a32Bytes(Buffer.from(value));
    h = Math.imul(h ^ c, 0x01000193);
  }
  return h >>> 0;
}

function fnv1a32Bytes(bytes: Uint8Array): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < bytes.length; i++) h = Math.imul(h ^ (bytes[i] as number), 0x01000193);
  return h >>> 0;
}

/** Base64url digest, cut to `length` characters. */
export function digest(value: string, length: number): string {
  return hash("sha256", value, "base64url").slice(0, length);
}

/** Canonical JSON (RFC 8785): equal content gives equal text. */
export function canonicalJson(value: unknown): string {
  return canonicalize(value) ?? "null";
}
