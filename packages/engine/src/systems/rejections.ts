/**
 * The refusals remembered for `explain`: the events a producer sent that were refused,
 * capped per match key and kept for the retention.
 */

import type { EngineContext } from "../engine-context.js";
import { type Rejection, rejectionRecord, toRejections } from "../formats/rejection-record.js";
import { recordRejectionCall } from "../transitions/recordRejection.js";

/** Most refusals kept per match key. */
export const REJECTIONS_KEPT = 20;

export class RejectionsSystem {
  constructor(private readonly ctx: EngineContext) {}

  /**
   * Remembers refused events (capped per match key, kept for retention), one
   * pipelined round trip. Only events whose type and correlation id are readable
   * can be placed; the caller skips the others.
   */
  async recordRejections(
    tenant: string,
    refusals: Array<{
      producer: string;
      eventType: string;
      correlationId: string;
      eventId?: string;
      reason: string;
      detail?: string;
    }>,
  ): Promise<void> {
    const { keys, config } = this.ctx;
    const now = this.ctx.now();
    await this.ctx.runAll(
      refusals.map((r) =>
        recordRejectionCall(keys.partition(keys.matchPartition(tenant, r.eventType, r.correlationId)), {
          matchKey: keys.matchKey(tenant, r.eventType, r.correlationId),
          refusal: rejectionRecord(r),
          cap: REJECTIONS_KEPT,
          keepMs: config.retentionMs,
          now,
        }),
      ),
    );
  }

  /** The refusals remembered for a match key, oldest first. */
  async rejections(tenant: string, eventType: string, correlationId: string): Promise<Rejection[]> {
    const { keys } = this.ctx;
    const k = keys.partition(keys.matchPartition(tenant, eventType, correlationId));
    const raw = await this.ctx.redis.hget(k.rejected, keys.matchKey(tenant, eventType, correlationId));
    return raw ? toRejections(raw) : [];
  }
}
