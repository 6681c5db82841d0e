/**
 * Credentials: who is calling, taken from the credential only (never from a body).
 *
 * - producers: `Rendezvous-Producer: <tenant>/<producer>` plus a bearer key or an
 *   HMAC-SHA256 signature over `"<t>.<raw body>"` (docs/api.md, Authentication);
 * - hosts: `Authorization: Bearer <hostKey>` (the key's tenant) or the admin token.
 *
 * Every failure is the same `unauthorized` error: no hint of which part failed.
 * Secrets are compared in constant time (`timingSafeEqual` over equal-length
 * digests); the index is built once from the config.
 */
import { createHmac, hash, timingSafeEqual } from "node:crypto";
import type { Config, ProducerConfig } from "@rendezvous/engine";
import { RendezvousError, typeMatcher } from "@rendezvous/protocol";

/** Largest allowed distance between a signature's `t` and the server clock. */
export const SIGNATURE_TOLERANCE_SEC = 300;

/** An authenticated producer. */
export interface ProducerIdentity {
  readonly tenant: string;
  readonly producer: string;
  /** events per second; undefined = no limit */
  readonly rateLimitPerSec: number | undefined;
  /** whether the producer may send this event type (exact or `prefix*`) */
  allows(eventType: string): boolean;
}

/** An authenticated host (its tenant) or the admin (every tenant). */
export type HostIdentity = { readonly kind: "host"; readonly tenant: string } | { readonly kind: "admin" };

interface ProducerEntry {
  identity: ProducerIdentity;
  keyDigests: Buffer[];
  secrets: string[];
}

/** Credentials of a config, indexed once. Build with {@link indexCredentials}. */
export interface CredentialIndex {
  readonly producers: ReadonlyMap<string, ProducerEntry>;
  /** sha256(hostKey) hex → tenant */
  readonly hostKeys: ReadonlyMap<string, string>;
  readonly adminDigest: Buffer | null;
}

/** Headers as node and fastify give them. */
export type RequestHeaders = Record<string, string | string[] | undefined>;

/** One-shot digest: no Hash object (a stream) per request. */
const sha256 = (value: string | Buffer): Buffer => hash("sha256", value, "buffer");
/** Compared against when the caller named no known producer, so the work is the same. */
const DUMMY_DIGEST = sha256("rendezvous: no such credential");

function unauthorized(): RendezvousError {
  return new RendezvousError("unauthorized");
}

function producerEntry(tenant: string, producer: string, p: ProducerConfig): ProducerEntry {
  return {
    identity: Object.freeze({
      tenant,
      producer,
      rateLimitPerSec: p.rateLimitPerSec,
      allows: typeMatcher(p.eventTypes),
    }),
    keyDigests: p.keys.map((k) => sha256(k)),
    secrets: [...p.secrets],
  };
}

/** Indexes the credentials of a parsed config (call once at start). */
export function indexCredentials(config: Pick<Config, "tenants" | "adminToken">): CredentialIndex {
  const producers = new Map<string, ProducerEntry>();
  const hostKeys = new Map<string, string>();
  for (const [tenant, t] of Object.entries(config.tenants)) {
    for (const [producer, p] of Object.entries(t.producers)) {
      producers.set(`${tenant}/${producer}`, producerEntry(tenant, producer, p));
    }
    for (const key of t.hostKeys) hostKeys.set(sha256(key).toString("hex"), tenant);
  }
  return { producers, hostKeys, adminDigest: config.adminToken ? sha256(config.adminToken) : null };
}

function single(value: string | string[] | undefined): string | undefined {
  return typeof value === "string" ? value : undefined;
}

/** The token of `Authorization: Bearer <token>`, or undefined. */
export function bearerToken(authorization: string | string[] | undefined): string | undefined {
  const header = single(authorization);
  if (header === undefined) return undefined;
  const m = /^Bearer +(\S+) *$/i.exec(header);
  return m ? m[1] : undefined;
}

/** Any of `digests` equals sha256(token); always compares against all of them. */
function matchesAny(token: string, digests: readonly Buffer[]): boolean {
  const presented = sha256(token);
  const real = digests.length > 0;
  let ok = false;
  for (const d of real ? digests : [DUMMY_DIGEST]) {
    if (timingSafeEqual(presented, d)) ok = true;
  }
  return ok && real;
}

export interface ParsedSignature {
  t: number;
  v1: Buffer[];
}

/** Parses `t=<unix seconds>,v1=<hex>[,v1=<hex>…]`; null when malformed. */
export function parseSignatureHeader(header: string): ParsedSignature | null {
  let t: number | null = null;
  const v1: Buffer[] = [];
  const parts = header.split(",");
  if (parts.length > 10) return null;
  for (const part of parts) {
    const eq = part.indexOf("=");
    if (eq < 0) return null;
    const name = part.slice(0, eq).trim();
    const value = part.slice(eq + 1).trim();
    if (name === "t") {
      if (t !== null || !/^\d{1,12}$/.test(value)) return null;
      t = Number(value);
    } else if (name === "v1") {
      if (!/^[0-9a-fA-F]{64}$/.test(value)) return null;
      v1.push(Buffer.from(value, "hex"));
    }
    // other schemes (v0, v2…) are ignored, as signers may add them
  }
  return t === null || v1.length === 0 ? null : { t, v1 };
}

/** hex HMAC-SHA256(secret, "<t>.<raw body>"): the `v1` of a signature. */
export function computeSignature(secret: string, t: number, rawBody: Buffer | string): string {
  return createHmac("sha256", secret).update(`${t}.`).update(rawBody).digest("hex");
}

/** Whether HMAC(secret, "<t>.<raw body>") of any secret equals any given `v1`; compares them all. */
function hmacMatches(signature: ParsedSignature, secrets: readonly string[], rawBody: Buffer): boolean {
  const real = secrets.length > 0;
  let ok = false;
  for (const secret of real ? secrets : ["rendezvous: no such secret"]) {
    const expected = createHmac("sha256", secret).update(`${signature.t}.`).update(rawBody).digest();
    for (const given of signature.v1) {
      if (timingSafeEqual(expected, given)) ok = true;
    }
  }
  return ok && real;
}

/**
 * A producer whose headers verified: who it is, and the signature still to verify
 * over the body (null when it sent none, and a verified bearer key alone).
 */
export interface ProducerHeaders {
  readonly identity: ProducerIdentity;
  readonly signature: { readonly parsed: ParsedSignature; readonly secrets: readonly string[] } | null;
}

/**
 * Checks everything of a producer credential that the headers hold, before any body
 * byte is read: a known `Rendezvous-Producer`, at least one credential, a bearer key
 * that verifies, a well-formed signature header within the clock tolerance from a
 * producer that has secrets. Only the signature's HMAC needs the body
 * ({@link verifyProducerBody}): a caller that cannot name a producer with secrets
 * cannot make the server read one.
 * @throws RendezvousError `unauthorized`, alike for every failure
 */
export function authenticateProducerHeaders(
  index: CredentialIndex,
  headers: RequestHeaders,
  nowMs: number = Date.now(),
): ProducerHeaders {
  const claimed = single(headers["rendezvous-producer"]);
  const entry = claimed === undefined ? undefined : index.producers.get(claimed.trim());
  const token = bearerToken(headers.authorization);
  const header = single(headers["rendezvous-signature"]);
  if (token === undefined && header === undefined) throw unauthorized();
  let ok = true;
  if (token !== undefined) ok = matchesAny(token, entry?.keyDigests ?? []) && ok;
  const parsed = header === undefined ? null : parseSignatureHeader(header);
  if (header !== undefined) {
    const fresh = parsed !== null && Math.abs(nowMs / 1000 - parsed.t) <= SIGNATURE_TOLERANCE_SEC;
    ok = fresh && (entry?.secrets.length ?? 0) > 0 && ok;
  }
  if (!ok || !entry) throw unauthorized();
  return { identity: entry.identity, signature: parsed ? { parsed, secrets: entry.secrets } : null };
}

/**
 * The producer of a request whose headers verified, once its body does: the
 * signature (if any) must be an HMAC of these exact bytes.
 * @throws RendezvousError `unauthorized`
 */
export function verifyProducerBody(checked: ProducerHeaders, rawBody: Buffer): ProducerIdentity {
  if (checked.signature && !hmacMatches(checked.signature.parsed, checked.signature.secrets, rawBody)) {
    throw unauthorized();
  }
  return checked.identity;
}

/**
 * Authenticates a host or the admin by `Authorization: Bearer <token>`.
 * @throws RendezvousError `unauthorized`
 */
export function authenticateHost(index: CredentialIndex, headers: RequestHeaders): HostIdentity {
  const token = bearerToken(headers.authorization);
  if (token === undefined) throw unauthorized();
  const presented = sha256(token);
  if (index.adminDigest && timingSafeEqual(presented, index.adminDigest)) return { kind: "admin" };
  // The map is keyed by digest: a look-up reveals nothing about the key's bytes.
  const tenant = index.hostKeys.get(presented.toString("hex"));
  if (tenant === undefined) throw unauthorized();
  return { kind: "host", tenant };
}

/**
 * The tenant a host read or write is about: a host's own tenant (naming another
 * answers 404, as if it did not exist), or the configured tenant the admin names in
 * `?tenant=` (a tenant the config does not have is refused, so nothing is stored or
 * read under a name no host key can reach).
 * @param tenants the config's tenants (only their names are read)
 * @throws RendezvousError `not_found` (a host naming another tenant), `invalid_request`
 *   (admin without tenant, or naming an unknown one)
 */
export function readTenant(
  identity: HostIdentity,
  requested: unknown,
  tenants: Readonly<Record<string, unknown>>,
): string {
  if (requested !== undefined && typeof requested !== "string") {
    throw new RendezvousError("invalid_request", undefined, {
      issues: [{ path: ["tenant"], message: "give one tenant" }],
    });
  }
  if (identity.kind === "host") {
    if (requested !== undefined && requested !== identity.tenant) throw new RendezvousError("not_found");
    return identity.tenant;
  }
  if (requested === undefined || requested === "") {
    throw new RendezvousError("invalid_request", "the admin token reads a tenant named by ?tenant=", {
      issues: [{ path: ["tenant"], message: "required with the admin token" }],
    });
  }
  if (!Object.hasOwn(tenants, requested)) {
    throw new RendezvousError("invalid_request", "no such tenant in the config", {
      issues: [{ path: ["tenant"], message: "unknown tenant" }],
    });
  }
  return requested;
}
