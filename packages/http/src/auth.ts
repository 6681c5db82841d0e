/**
 * Credentials: who is calling, taken from the credential only (never from a body).
 *
 * - producers: `Rendezvous-Producer: <tenant>/<producer>` plus a bearer key or an
 *   HMAC-SHA256 signature over `"<t>.<raw body>"` (docs/api.md, Authentication);
 * - hosts: `Authorization: Bearer <hostKey>` (the key's tenant) or the admin token.
 *
 * Every failure is the same `unauthorized` error: no hint of which part failed.
 * Secrets are compared in constant time (`timingSafeEqual` over equal-length
 * digests); the index is built once per registry view (a Directory change).
 */
import { createHmac, timingSafeEqual } from "node:crypto";
import {
  type Config,
  type Directory,
  type ProducerView,
  type RegistryView,
  type TenantView,
  viewOfConfig,
} from "@rendezvous/engine";
import { RendezvousError, typeMatcher } from "@rendezvous/protocol";
import { type Presented, presentedOn, sha256 } from "./presented.js";

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

interface KeyEntry {
  readonly id: string;
  readonly digest: Buffer;
  /** whether `digest` is the HMAC under the secret key (else a plain SHA-256) */
  readonly mac: boolean;
  /** ms; null = no end */
  readonly expiresAt: number | null;
}

interface SecretEntry {
  readonly id: string;
  readonly secret: string;
  readonly expiresAt: number | null;
}

interface ProducerEntry {
  identity: ProducerIdentity;
  keys: KeyEntry[];
  secrets: SecretEntry[];
}

interface HostKeyEntry {
  readonly tenant: string;
  readonly id: string;
  readonly expiresAt: number | null;
}

/**
 * Credentials of the registry view (or of a config), indexed once per view. Build with
 * {@link indexCredentials} (a config: fixed) or {@link liveCredentials} (a Directory:
 * re-indexed on every change, so a revoked key is refused from the next request on).
 */
export interface CredentialIndex {
  readonly producers: ReadonlyMap<string, ProducerEntry>;
  /** `m:<hmac hex>` (or `s:<sha256 hex>`, earlier records) of a host key → its tenant and id */
  readonly hostKeys: ReadonlyMap<string, HostKeyEntry>;
  readonly adminDigest: Buffer | null;
  /** HMAC-SHA256 under the registry's secret key: the digest of the stored keys (absent: none are) */
  readonly mac?: ((text: string) => string) | undefined;
  /** told the id of each key or secret a request authenticated with (last-use marks) */
  readonly used?: ((keyId: string) => void) | undefined;
}

/** Headers as node and fastify give them. */
export type RequestHeaders = Record<string, string | string[] | undefined>;

/** Compared against when the caller named no known producer, so the work is the same. */
const DUMMY_DIGEST = sha256("rendezvous: no such credential");

function unauthorized(): RendezvousError {
  return new RendezvousError("unauthorized");
}

function producerEntry(p: ProducerView): ProducerEntry {
  return {
    identity: Object.freeze({
      tenant: p.tenant,
      producer: p.id,
      rateLimitPerSec: p.rateLimitPerSec,
      allows: typeMatcher(p.eventTypes),
    }),
    keys: p.keys.map((k) => ({
      id: k.id,
      digest: Buffer.from(k.hash, "hex"),
      mac: k.form === "mac",
      expiresAt: k.expiresAt,
    })),
    secrets: p.secrets.map((s) => ({ id: s.id, secret: s.secret, expiresAt: s.expiresAt })),
  };
}

/** Adds a tenant's credentials to the maps: none when it (or a producer) is disabled. */
function indexTenant(t: TenantView, producers: Map<string, ProducerEntry>, hostKeys: Map<string, HostKeyEntry>): void {
  if (t.disabled) return;
  for (const [producer, p] of t.producers) {
    if (!p.disabled) producers.set(`${t.name}/${producer}`, producerEntry(p));
  }
  for (const k of t.hostKeys) hostKeys.set(hostKeyField(k), { tenant: t.name, id: k.id, expiresAt: k.expiresAt });
}

function hostKeyField(k: { hash: string; form: "mac" | "sha256" }): string {
  return `${k.form === "mac" ? "m" : "s"}:${k.hash}`;
}

/** Indexes the credentials of a registry view: a disabled tenant or producer has none. */
export function indexView(
  view: RegistryView,
  adminToken: string | undefined,
  used?: (keyId: string) => void,
): CredentialIndex {
  const producers = new Map<string, ProducerEntry>();
  const hostKeys = new Map<string, HostKeyEntry>();
  for (const t of view.tenants.values()) indexTenant(t, producers, hostKeys);
  return { producers, hostKeys, adminDigest: adminToken ? sha256(adminToken) : null, used, mac: view.mac };
}

/** Indexes the credentials of a parsed config (call once at start). */
export function indexCredentials(config: Pick<Config, "tenants" | "eventTypes" | "adminToken">): CredentialIndex {
  return indexView(viewOfConfig(config), config.adminToken);
}

/**
 * The credentials of a Directory, kept current with it: a change that names its tenants
 * re-indexes those only (copies of the maps, the others' entries kept).
 */
export function liveCredentials(
  directory: Directory,
  adminToken: string | undefined,
  used?: (keyId: string) => void,
): CredentialIndex {
  let current = indexView(directory.view, adminToken, used);
  let held = directory.view;
  directory.onChange((view, change) => {
    if (change === null) current = indexView(view, adminToken, used);
    else if (change.tenants.size > 0) {
      const producers = new Map(current.producers);
      const hostKeys = new Map(current.hostKeys);
      for (const name of change.tenants) {
        const before = held.tenants.get(name);
        for (const id of before?.producers.keys() ?? []) producers.delete(`${name}/${id}`);
        for (const k of before?.hostKeys ?? []) hostKeys.delete(hostKeyField(k));
        const after = view.tenants.get(name);
        if (after) indexTenant(after, producers, hostKeys);
      }
      current = { producers, hostKeys, adminDigest: current.adminDigest, used, mac: view.mac };
    }
    held = view;
  });
  return {
    get producers() {
      return current.producers;
    },
    get hostKeys() {
      return current.hostKeys;
    },
    get mac() {
      return current.mac;
    },
    adminDigest: current.adminDigest,
    used,
  };
}

const live = (expiresAt: number | null, nowMs: number) => expiresAt === null || expiresAt > nowMs;

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

/**
 * The key among `keys` whose digest (of its form) is the token's and that has not expired;
 * compares against every key (a dummy when there is none), so the time says nothing of
 * which matched.
 */
function matchingKey(presented: Presented, keys: readonly KeyEntry[], nowMs: number): KeyEntry | undefined {
  if (keys.length === 0) {
    timingSafeEqual(presented.mac, DUMMY_DIGEST);
    return undefined;
  }
  let found: KeyEntry | undefined;
  for (const k of keys) {
    const mine = k.mac ? presented.mac : presented.sha;
    if (mine.length === k.digest.length && timingSafeEqual(mine, k.digest) && live(k.expiresAt, nowMs)) found = k;
  }
  return found;
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

/** The secret whose HMAC(secret, "<t>.<raw body>") equals a given `v1`; compares them all. */
function hmacMatch(
  signature: ParsedSignature,
  secrets: readonly SecretEntry[],
  rawBody: Buffer,
): SecretEntry | undefined {
  const real = secrets.length > 0;
  let found: SecretEntry | undefined;
  for (const entry of real ? secrets : [{ id: "", secret: "rendezvous: no such secret", expiresAt: null }]) {
    const expected = createHmac("sha256", entry.secret).update(`${signature.t}.`).update(rawBody).digest();
    for (const given of signature.v1) {
      if (timingSafeEqual(expected, given)) found = entry;
    }
  }
  return real ? found : undefined;
}

/**
 * A producer whose headers verified: who it is, and the signature still to verify
 * over the body (null when it sent none, and a verified bearer key alone).
 */
export interface ProducerHeaders {
  readonly identity: ProducerIdentity;
  readonly signature: { readonly parsed: ParsedSignature; readonly secrets: readonly SecretEntry[] } | null;
  /** the index whose last-use marks the body's secret goes to */
  readonly index: CredentialIndex;
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
  conn?: object,
): ProducerHeaders {
  const claimed = single(headers["rendezvous-producer"]);
  const entry = claimed === undefined ? undefined : index.producers.get(claimed.trim());
  const token = bearerToken(headers.authorization);
  const header = single(headers["rendezvous-signature"]);
  if (token === undefined && header === undefined) throw unauthorized();
  let ok = true;
  let key: KeyEntry | undefined;
  if (token !== undefined) {
    key = matchingKey(presentedOn(conn, token, index.mac), entry?.keys ?? [], nowMs);
    ok = key !== undefined;
  }
  const parsed = header === undefined ? null : parseSignatureHeader(header);
  const all = entry?.secrets ?? [];
  // (a copy only when one of them has an end: most never do)
  const secrets = all.some((s) => s.expiresAt !== null) ? all.filter((s) => live(s.expiresAt, nowMs)) : all;
  if (header !== undefined) {
    const fresh = parsed !== null && Math.abs(nowMs / 1000 - parsed.t) <= SIGNATURE_TOLERANCE_SEC;
    ok = fresh && secrets.length > 0 && ok;
  }
  if (!ok || !entry) throw unauthorized();
  if (key) index.used?.(key.id);
  return { identity: entry.identity, signature: parsed ? { parsed, secrets } : null, index };
}

/**
 * The producer of a request whose headers verified, once its body does: the
 * signature (if any) must be an HMAC of these exact bytes.
 * @throws RendezvousError `unauthorized`
 */
export function verifyProducerBody(checked: ProducerHeaders, rawBody: Buffer): ProducerIdentity {
  if (checked.signature) {
    const secret = hmacMatch(checked.signature.parsed, checked.signature.secrets, rawBody);
    if (!secret) throw unauthorized();
    checked.index.used?.(secret.id);
  }
  return checked.identity;
}

/**
 * Authenticates a host or the admin by `Authorization: Bearer <token>`.
 * @throws RendezvousError `unauthorized`
 */
export function authenticateHost(
  index: CredentialIndex,
  headers: RequestHeaders,
  nowMs: number = Date.now(),
  conn?: object,
): HostIdentity {
  const token = bearerToken(headers.authorization);
  if (token === undefined) throw unauthorized();
  const presented = presentedOn(conn, token, index.mac);
  if (index.adminDigest && timingSafeEqual(presented.sha, index.adminDigest)) return { kind: "admin" };
  // The map is keyed by digest: a look-up reveals nothing about the key's bytes.
  const key =
    (index.mac ? index.hostKeys.get(`m:${presented.mac.toString("hex")}`) : undefined) ??
    index.hostKeys.get(`s:${presented.sha.toString("hex")}`);
  if (key === undefined || !live(key.expiresAt, nowMs)) throw unauthorized();
  index.used?.(key.id);
  return { kind: "host", tenant: key.tenant };
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
