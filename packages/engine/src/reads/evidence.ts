/** The evidence `explain` reads beyond the backlog: buffered events that nearly match a wait. */
import type { NearMiss } from "@rendezvous/protocol";
import { execBatch } from "../batch.js";
import { inboxTenantRange, parseInboxMember } from "../formats/inbox-members.js";
import { iso } from "../formats/iso.js";
import type { ReaderSource } from "./source.js";

/**
 * Buffered (unmatched) events of the tenant with the wait's type (any of its types)
 * but another correlation id, or its correlation id with another type. Bounded: at
 * most `perPartition` inbox members per partition are read.
 */
export async function nearMisses(
  src: ReaderSource,
  tenant: string,
  eventType: string | readonly string[],
  correlationId: string,
  perPartition = 200,
): Promise<NearMiss[]> {
  const types: readonly string[] = typeof eventType === "string" ? [eventType] : eventType;
  const [min, max] = inboxTenantRange(tenant);
  const results = await execBatch(
    src.redis,
    src.keys.allPartitions().map((p) => {
      const key = src.keys.partition(p).inbox;
      return { key, add: (pl) => pl.zrangebylex(key, min, max, "LIMIT", 0, perPartition) };
    }),
  );
  const misses: NearMiss[] = [];
  for (const [err, members] of results) {
    if (err) throw err;
    for (const member of members as string[]) {
      const m = parseInboxMember(member);
      const sameType = types.includes(m.eventType);
      const sameCorr = m.correlationId === correlationId;
      if (sameType === sameCorr) continue; // an exact match is not a miss; unrelated is not near
      misses.push({
        producer: m.producer,
        id: m.eventId,
        type: m.eventType,
        correlationId: m.correlationId,
        acceptedAt: iso(m.acceptedMs),
        differs: sameType ? "correlationId" : "type",
      });
    }
  }
  return misses.sort((a, b) => (a.acceptedAt < b.acceptedAt ? 1 : -1)).slice(0, 20);
}
