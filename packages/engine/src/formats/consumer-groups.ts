/**
 * The one reader of `XINFO GROUPS` replies: a flat [name, value, …] list per group.
 */

export interface ConsumerGroupInfo {
  name: string;
  consumers: number;
  pending: number;
  lastDeliveredId: string;
  /** entries not yet delivered to the group (Redis 7+; null when Redis cannot tell) */
  lag: number | null;
}

function field(group: unknown[], name: string): unknown {
  const i = group.indexOf(name);
  return i < 0 ? undefined : group[i + 1];
}

/** The group `name` of an XINFO GROUPS reply, or null (no such group, or not a reply). */
export function findGroup(reply: unknown, name: string): ConsumerGroupInfo | null {
  if (!Array.isArray(reply)) return null;
  const group = (reply as unknown[][]).find((g) => field(g, "name") === name);
  if (!group) return null;
  const lag = field(group, "lag");
  return {
    name,
    consumers: Number(field(group, "consumers") ?? 0),
    pending: Number(field(group, "pending") ?? 0),
    lastDeliveredId: String(field(group, "last-delivered-id")),
    lag: typeof lag === "number" ? lag : null,
  };
}
