/**
 * The member layouts of the wait indexes and the run index, and the wait id they name
 * (the same layouts as lua/includes/wait-index.lua and digests.lua; the key names are KeyLayout's).
 *
 * - wait id: "w<partition>.<position digest 16>", the partition its match key lies in;
 * - wait-index member (waiting, done): "<index key><position digest 16>", the index key
 *   being the encoded tenant + 4 + 4 digest characters; members written before
 *   2026-12-01 carry the 12-character legacy index key (docs/architecture.md);
 * - run-index member: "<run digest 4><position digest 16><partition tag 3><defHash 5>";
 * - an any-of wait has a wait-index member per match key: those of its other match keys
 *   (all but the first) are counted in fields of the partition's waits hash (see
 *   {@link extraMembersField}), which a count of waits by index members subtracts.
 */
import { hash } from "node:crypto";
import { digest, encodeParts } from "../encoding.js";

const WAIT_ID = /^w(\d{1,5})\.([A-Za-z0-9_-]{16})$/;

const TAG = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/**
 * Characters of a wait id body: the end of every wait-index member, whatever its layout,
 * and a parked deadline entry (lua/includes/parked-deadlines.lua).
 */
export const WAIT_BODY_LENGTH = 16;
const RUN_DIGEST_LENGTH = 4;
const POSITION_DIGEST_LENGTH = 16;
const PARTITION_TAG_LENGTH = 3;
/** Characters of a run position: run digest + position digest. */
const RUN_POSITION_LENGTH = RUN_DIGEST_LENGTH + POSITION_DIGEST_LENGTH;

/** 24 bits of SHA-1 as 4 base64url characters (the same as digest4 in lua/includes/digests.lua). */
export function digest4(value: string): string {
  const n = Number.parseInt(hash("sha1", value, "hex").slice(0, 6), 16);
  return tagPartition(n >> 6) + (TAG[n & 63] as string);
}

/** A partition (< 2^18) as 3 base64url characters: the fixed-width tag in run-index members. */
export function tagPartition(p: number): string {
  return (TAG[(p >> 12) & 63] as string) + (TAG[(p >> 6) & 63] as string) + (TAG[p & 63] as string);
}

/** Inverse of {@link tagPartition}. */
export function untagPartition(tag: string): number {
  return (TAG.indexOf(tag[0] ?? "") << 12) | (TAG.indexOf(tag[1] ?? "") << 6) | TAG.indexOf(tag[2] ?? "");
}

/** What the wait ids of a partition start with ("w<partition>."). */
export function waitIdPrefix(partition: number): string {
  return `w${partition}.`;
}

/** The wait id of a position digest whose match key lies in `partition`. */
export function waitIdOf(partition: number, positionDigest: string): string {
  return waitIdPrefix(partition) + positionDigest;
}

/** The partition a wait id names (not checked against a partition count), or null for a malformed id. */
export function parseWaitId(waitId: string): { partition: number; positionDigest: string } | null {
  const m = WAIT_ID.exec(waitId);
  return m ? { partition: Number(m[1]), positionDigest: m[2] as string } : null;
}

/** Most (tenant, type) index-key prefixes remembered (a cache: cleared when full). */
const TYPE_PREFIXES_KEPT = 4096;
const typePrefixes = new Map<string, string>();

/**
 * The index key of a tenant, (tenant, type) or match key in the wait indexes: the
 * encoded tenant, then a 4-character digest of (tenant, type), then one of the match
 * key (see indexKey in lua/includes/digests.lua, which computes the same from an
 * encoded match key). The tenant part is exact (the encoding is prefix-free): a
 * tenant's range holds its own waits only, however many tenants there are; the
 * digests may collide, so readers check each wait's own match key. Ingest computes one
 * per event for its event record, so the (tenant, type) prefix is remembered.
 */
export function indexKey(tenant: string, eventType?: string, correlationId?: string): string {
  if (eventType === undefined) return encodeParts(tenant);
  const tenantType = encodeParts(tenant, eventType);
  let prefix = typePrefixes.get(tenantType);
  if (prefix === undefined) {
    prefix = encodeParts(tenant) + digest4(tenantType);
    if (typePrefixes.size >= TYPE_PREFIXES_KEPT) typePrefixes.clear();
    typePrefixes.set(tenantType, prefix);
  }
  if (correlationId === undefined) return prefix;
  // (the encoded match key is the encoded (tenant, type) followed by the encoded correlation id)
  return prefix + digest4(tenantType + encodeParts(correlationId));
}

/** Most tenant digests remembered (a cache: cleared when full). */
const TENANT_DIGESTS_KEPT = 4096;
const tenantDigests = new Map<string, string>();

/**
 * The legacy index key (4, 8 or 12 characters) of what `ik` (an {@link indexKey} of the
 * same tenant) selects: the tenant's 4-character digest in place of the encoded tenant,
 * as members written before 2026-12-01 carry it. Two tenants may share a legacy digest,
 * so a legacy range may hold another tenant's waits: readers check each wait's tenant.
 */
export function legacyIndexKey(tenant: string, ik: string = indexKey(tenant)): string {
  let d = tenantDigests.get(tenant);
  const encoded = encodeParts(tenant);
  if (d === undefined) {
    d = digest4(encoded);
    if (tenantDigests.size >= TENANT_DIGESTS_KEPT) tenantDigests.clear();
    tenantDigests.set(tenant, d);
  }
  return d + ik.slice(encoded.length);
}

/** The wait id a wait-index member of `partition` names (either layout). */
export function waitIdOfIndexMember(partition: number, member: string): string {
  return waitIdOf(partition, member.slice(-WAIT_BODY_LENGTH));
}

/**
 * Digest of a run (tenant, runId): the prefix of its run-index members (4 chars). Short:
 * it only narrows a listing by run, which checks each wait's run id.
 */
export function runDigest(tenant: string, runId: string): string {
  return digest(encodeParts(tenant, runId), RUN_DIGEST_LENGTH);
}

/** Digest of a run position (tenant, runId, position): the body of its wait id (16 chars). */
export function positionDigest(tenant: string, runId: string, position: string): string {
  return digest(encodeParts(tenant, runId, position), POSITION_DIGEST_LENGTH);
}

/**
 * A run position's key in the run index: run digest + position digest, 20 chars.
 * Fixed length, so a lexical range over it selects exactly one run position, and a
 * range over the run digest lists the positions of one run.
 */
export function runPosition(tenant: string, runId: string, position: string): string {
  return runDigest(tenant, runId) + positionDigest(tenant, runId, position);
}

/** The parts of a run-index member (or of a run position + partition tag, with defHash ""). */
export function parseRunMember(member: string): { runPosition: string; partition: number; defHash: string } {
  const tagEnd = RUN_POSITION_LENGTH + PARTITION_TAG_LENGTH;
  return {
    runPosition: member.slice(0, RUN_POSITION_LENGTH),
    partition: untagPartition(member.slice(RUN_POSITION_LENGTH, tagEnd)),
    defHash: member.slice(tagEnd),
  };
}

/** The wait id a run-index member (or a run position + partition tag) names. */
export function waitIdOfRunMember(member: string): string {
  const { partition } = parseRunMember(member);
  return waitIdOf(partition, member.slice(RUN_DIGEST_LENGTH, RUN_POSITION_LENGTH));
}

/**
 * The field of a partition's waits hash that counts the extra members (one per match
 * key after the first) of its any-of waits in the waiting (`w`) or done (`d`) index: of
 * the partition, or of one tenant (the same as countExtraMembers in
 * lua/includes/wait-index.lua; absent: 0). Wait ids start with "w<digit>", so the
 * fields are apart from the records. Waits registered before these counters have
 * none: their extra members are counted as waits until they leave the index.
 */
export function extraMembersField(index: "w" | "d", tenant?: string): string {
  return tenant === undefined ? `#${index}` : `#${index}${encodeParts(tenant)}`;
}
