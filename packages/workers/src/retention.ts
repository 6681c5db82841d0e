/**
 * Retention: removes what has outlived its time (settled waits, buffered events, event
 * and dedup records, refusals) in the given partitions, in bounded steps: at most
 * EXPIRE_ROUNDS pipelined rounds of EXPIRE_BATCH records per partition, a partition
 * leaving the rounds once it has nothing more to remove. The Scheduler runs it at the
 * end of each sweep; what one run leaves, the next takes.
 */
import type { Store } from "@rendezvous/engine";

/** Records removed per partition per expiry call, and calls per run. */
const EXPIRE_BATCH = 500;
const EXPIRE_ROUNDS = 4;

/** One retention run over `partitions`; how many records it removed. */
export async function expireOutlived(store: Store, partitions: readonly number[]): Promise<number> {
  let open = [...partitions];
  let expired = 0;
  for (let round = 0; round < EXPIRE_ROUNDS && open.length > 0; round++) {
    const results = await store.expireMany(open, EXPIRE_BATCH);
    expired += results.reduce((n, r) => n + r.handled, 0);
    open = open.filter((_, i) => results[i]?.more);
  }
  return expired;
}
