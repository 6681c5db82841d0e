/**
 * Named continuation groups (docs/api.md, Continuations over HTTP): a tenant's config may
 * route event types to named groups, each with a queue of its own, so that a pool of
 * workers takes only its group's continuations (BullMQ cannot filter one queue).
 *
 * - `continuationQueueName(tenant, group?)` is the one owner of the queue names: the
 *   dispatcher adds to it, the HTTP claims and Bull Board read it.
 * - `continuationGroupOf` is the routing: the first group (in config order) one of whose
 *   patterns matches the wait's event type; none = the tenant's default queue.
 */
import { z } from "zod";
import { RendezvousError } from "./errors.js";
import { EventTypePattern, typeMatcher } from "./type-patterns.js";

/** A group's name: letters, digits, `.`, `_`, `-` (1–64). */
export const ContinuationGroupName = z.string().regex(/^[A-Za-z0-9._-]{1,64}$/, "letters, digits, . _ - (1–64)");

export const ContinuationGroupConfig = z.strictObject({
  /** Event types routed to this group; a trailing `*` matches a prefix. */
  eventTypes: z.array(EventTypePattern).min(1),
});
export type ContinuationGroupConfig = z.infer<typeof ContinuationGroupConfig>;

/**
 * A tenant's named groups, in order: the first whose patterns match a wait's `eventType`
 * takes its continuation; a type matching none stays in the default queue.
 */
export const ContinuationGroups = z.record(ContinuationGroupName, ContinuationGroupConfig);
export type ContinuationGroups = z.infer<typeof ContinuationGroups>;

/** BullMQ queue of a tenant's continuations: `continuations.<tenant>`, or `continuations.<tenant>.<group>`. */
export function continuationQueueName(tenant: string, group?: string): string {
  return group === undefined ? `continuations.${tenant}` : `continuations.${tenant}.${group}`;
}

/** Whether a queue name is one `continuationQueueName` makes. */
export function isContinuationQueueName(name: string): boolean {
  return name.startsWith("continuations.");
}

/** The group whose queue takes a continuation of this event type; undefined = the default queue. */
export function continuationGroupOf(groups: ContinuationGroups | undefined, eventType: string): string | undefined {
  if (!groups) return undefined;
  for (const [name, g] of Object.entries(groups)) {
    if (typeMatcher(g.eventTypes)(eventType)) return name;
  }
  return undefined;
}

/** The queue a wait's continuation goes to: its tenant's, or that of the group its event type is routed to. */
export function continuationQueueOf(
  tenants: Readonly<Record<string, { continuationGroups?: ContinuationGroups | undefined }>>,
  tenant: string,
  eventType: string,
): string {
  return continuationQueueName(tenant, continuationGroupOf(tenants[tenant]?.continuationGroups, eventType));
}

/**
 * Every queue of every tenant, each once: tenant names may hold `.`, so tenant `a`'s group
 * `b` and tenant `a.b` would share `continuations.a.b`; such a config is refused.
 * @throws RendezvousError `invalid_config` naming the group
 */
export function continuationQueues(
  tenants: Readonly<Record<string, { continuationGroups?: ContinuationGroups }>>,
): string[] {
  const owner = new Map<string, string>();
  for (const tenant of Object.keys(tenants)) owner.set(continuationQueueName(tenant), `tenant ${tenant}`);
  for (const [tenant, t] of Object.entries(tenants)) {
    for (const group of Object.keys(t.continuationGroups ?? {})) {
      const name = continuationQueueName(tenant, group);
      const other = owner.get(name);
      if (other !== undefined) {
        const problem = `tenants.${tenant}.continuationGroups.${group}: its queue ${name} is also that of ${other}; rename one of them`;
        throw new RendezvousError("invalid_config", `invalid config: ${problem}`, { problems: [problem] });
      }
      owner.set(name, `group ${group} of tenant ${tenant}`);
    }
  }
  return [...owner.keys()];
}
