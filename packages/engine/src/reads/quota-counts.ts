/**
 * The tenants' quota counts as the indexes and the inboxes hold them (engine/src/quotas.ts
 * keeps counters of them and sets them right from these): per tenant and partition, a
 * ZLEXCOUNT of its waiting members (and, while the indexes may hold legacy members, of its
 * legacy ones: KeyLayout.legacyIndex), one of its inbox members, and the count of any-of
 * waits' extra waiting members (formats/index-members.ts extraMembersField), subtracted:
 * an any-of wait counts once.
 */
import type { ChainableCommander } from "ioredis";
import type { BatchCommand, BatchReply } from "../batch.js";
import { prefixRange } from "../encoding.js";
import { inboxTenantRange } from "../formats/inbox-members.js";
import { extraMembersField, indexKey, legacyIndexKey } from "../formats/index-members.js";
import type { KeyLayout } from "../keys.js";

/** The counts of a tenant: waits in state waiting, events buffered unmatched. */
export interface TenantUsage {
  waitingWaits: number;
  bufferedEvents: number;
}

/** The commands that count `tenants` (for one batch; {@link sumCounts} reads their replies). */
export function countCommands(k: KeyLayout, tenants: readonly string[]): BatchCommand[] {
  const commands: BatchCommand[] = [];
  for (const tenant of tenants) {
    const current = prefixRange(indexKey(tenant));
    const legacy = prefixRange(legacyIndexKey(tenant));
    const inbox = inboxTenantRange(tenant);
    const extra = extraMembersField("w", tenant);
    for (const p of k.allPartitions()) {
      const keys = k.partition(p);
      const count = (key: string, [min, max]: [string, string]) => ({
        key,
        add: (pl: ChainableCommander) => pl.zlexcount(key, min, max),
      });
      commands.push(count(keys.waiting, current), count(keys.inbox, inbox), {
        key: keys.waits,
        add: (pl: ChainableCommander) => pl.hget(keys.waits, extra),
      });
      if (k.legacyIndex) commands.push(count(keys.waiting, legacy));
    }
  }
  return commands;
}

/** The counts from the replies of {@link countCommands}, at the start of `replies`. */
export function sumCounts(k: KeyLayout, tenants: readonly string[], replies: BatchReply[]): Map<string, TenantUsage> {
  // per partition: current waiting, inbox, any-of waits' extra waiting members (members,
  // not waits), then (legacy deployments) legacy waiting
  const step = k.legacyIndex ? 4 : 3;
  const per = k.partitions * step;
  const counts = new Map<string, TenantUsage>();
  tenants.forEach((tenant, t) => {
    let waiting = 0;
    let buffered = 0;
    for (let i = 0; i < per; i++) {
      const [err, n] = replies[t * per + i] ?? [null, 0];
      if (err) throw err;
      const at = i % step;
      if (at === 1) buffered += Number(n);
      else if (at === 2) waiting -= Number(n ?? 0);
      else waiting += Number(n);
    }
    counts.set(tenant, { waitingWaits: Math.max(0, waiting), bufferedEvents: buffered });
  });
  return counts;
}
