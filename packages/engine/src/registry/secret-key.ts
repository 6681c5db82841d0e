/**
 * The registry's secret key: AES-256-GCM for the secrets verification must read (HMAC
 * secrets, webhook secrets), HMAC-SHA256 for fingerprints and the key check. It comes
 * from `RENDEZVOUS_SECRET_KEY` (64 hex digits or base64 of 32 bytes), else it is the
 * development key kept beside the registry in Redis (registry/sync.ts; docs/api.md, Admin).
 */
import { createCipheriv, createDecipheriv, createHmac, hash, randomBytes } from "node:crypto";
import { RendezvousError } from "@rendezvous/protocol";

const ENCRYPTED = /^v1:([A-Za-z0-9_-]{16}):([A-Za-z0-9_-]{22}):([A-Za-z0-9_-]*)$/;

/** SHA-256 hex of a key: the only form a bearer or host key is stored in. */
export function keyHash(key: string): string {
  return hash("sha256", key, "hex");
}

export class SecretKey {
  readonly #key: Buffer;

  constructor(key: Buffer) {
    if (key.length !== 32) throw new RendezvousError("invalid_config", "the secret key must be 32 bytes");
    this.#key = Buffer.from(key);
  }

  /** Parses `RENDEZVOUS_SECRET_KEY`: 64 hex digits, or base64 (url-safe or not) of 32 bytes. */
  static parse(text: string): SecretKey {
    const t = text.trim();
    const bytes = /^[0-9a-fA-F]{64}$/.test(t) ? Buffer.from(t, "hex") : Buffer.from(t, "base64");
    if (bytes.length !== 32) {
      throw new RendezvousError(
        "invalid_config",
        "invalid config: RENDEZVOUS_SECRET_KEY: give 32 bytes as 64 hex digits or base64",
      );
    }
    return new SecretKey(bytes);
  }

  /** A fresh random key (tests, and the development key file). */
  static generate(): SecretKey {
    return new SecretKey(randomBytes(32));
  }

  /** The key in hex (the development key as stored beside the registry). */
  toHex(): string {
    return this.#key.toString("hex");
  }

  /** `v1:<iv>:<tag>:<ciphertext>` (base64url), a fresh IV each time. */
  encrypt(plain: string): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv("aes-256-gcm", this.#key, iv);
    const ct = Buffer.concat([cipher.update(plain, "utf8"), cipher.final()]);
    return `v1:${iv.toString("base64url")}:${cipher.getAuthTag().toString("base64url")}:${ct.toString("base64url")}`;
  }

  /** @throws Error when the text was not encrypted with this key */
  decrypt(text: string): string {
    const m = ENCRYPTED.exec(text);
    if (!m) throw new Error("not an encrypted registry value");
    const decipher = createDecipheriv("aes-256-gcm", this.#key, Buffer.from(m[1] as string, "base64url"));
    decipher.setAuthTag(Buffer.from(m[2] as string, "base64url"));
    return Buffer.concat([decipher.update(Buffer.from(m[3] as string, "base64url")), decipher.final()]).toString(
      "utf8",
    );
  }

  /** HMAC-SHA256 hex of a text under this key: fingerprints that reveal nothing without the key. */
  mac(text: string): string {
    return createHmac("sha256", this.#key).update(text).digest("hex");
  }

  /** The check value stored beside the registry: says whether a process holds the same key. */
  check(): string {
    return this.mac("rendezvous registry key check").slice(0, 32);
  }
}
