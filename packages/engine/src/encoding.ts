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

/**
 * The lexical range (ZRANGEBYLEX / ZLEXCOUNT min, max) of the members that start with
 * `prefix`: from "[<prefix>" to "(<prefix>\xff" (an encoding's bytes never reach 0xff).
 */
export function prefixRange(prefix: string): [string, string] {
  return [`[${prefix}`, `(${prefix}\xff`];
}

/** UTF-8 byte length; ASCII (the common case) without a Buffer call. */
function byteLength(value: string): number {
  for (let i = 0; i < value.length; i++) {
    if (value.charCodeAt(i) > 0x7f) return Buffer.byteLength(value);
  }
  return value.length;
}

/**
 * Reads `count` length-prefixed parts from the UTF-8 bytes `buf` at byte `pos`: their
 * values and the byte position after them. The one parser of the encoding.
 * @throws Error on malformed input
 */
export function readParts(buf: Buffer, pos: number, count: number): { parts: string[]; end: number } {
  const parts: string[] = [];
  for (let i = 0; i < count; i++) {
    const colon = buf.indexOf(0x3a, pos);
    const len = colon < 0 ? Number.NaN : Number(buf.subarray(pos, colon).toString());
    if (!Number.isInteger(len) || colon + 1 + len > buf.length) throw new Error("malformed length-prefixed parts");
    parts.push(buf.subarray(colon + 1, colon + 1 + len).toString());
    pos = colon + 1 + len;
  }
  return { parts, end: pos };
}

/** Inverse of {@link encodeParts}. */
export function decodeParts(encoded: string, count: number): string[] {
  return readParts(Buffer.from(encoded), 0, count).parts;
}

/** What follows the first `count` encoded parts of `encoded`. */
export function afterParts(encoded: string, count: number): string {
  const buf = Buffer.from(encoded);
  return buf.subarray(readParts(buf, 0, count).end).toString();
}

/**
 * Splits a concatenation of encodings of `arity` parts each (as in a stream entry's
 * `ks` field or a grouped expiry member) into those encodings.
 */
export function splitEncodings(concatenated: string, arity: number): string[] {
  const buf = Buffer.from(concatenated);
  const out: string[] = [];
  for (let pos = 0; pos < buf.length; ) {
    const { end } = readParts(buf, pos, arity);
    out.push(buf.subarray(pos, end).toString());
    pos = end;
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
