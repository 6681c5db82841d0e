/**
 * The HTTP side of the quotas (docs/api.md, Quotas): what the producer and host routes
 * check before they serve a request. The limiters and counts live in Redis, in the
 * tenant's slot (engine/src/quotas.ts, lua/takeQuota-1.lua), so they hold across every
 * API process: N processes do not allow N times a rate. One script call per request
 * (none when no limit applies); a refusal takes nothing and stores nothing.
 */
import { type Metrics, type QuotaRequest, quotaError, type Store } from "@rendezvous/engine";
import type { HostIdentity } from "./auth.js";

/**
 * The tenant whose `hostRequestsPerSec` a host request counts against: a host key's own,
 * or the configured tenant the admin names with `?tenant=`; null for an admin request
 * that names none (a wait by id, any tenant).
 */
export function quotaTenant(
  identity: HostIdentity,
  query: unknown,
  tenants: Readonly<Record<string, unknown>>,
): string | null {
  if (identity.kind === "host") return identity.tenant;
  const named = (query as { tenant?: unknown } | undefined)?.tenant;
  return typeof named === "string" && Object.hasOwn(tenants, named) ? named : null;
}

/** What a producer request counts against (besides the producer's own rate). */
const PRODUCER_QUOTAS = { count: "bufferedEvents", rate: "producerEventsPerSec" } as const;

export class QuotaGate {
  /**
   * @param now a fixed clock for the limiters (tests only); absent, Redis TIME, the one
   * clock every API process shares
   */
  constructor(
    private readonly store: Store,
    private readonly metrics: Metrics,
    private readonly now?: () => number,
  ) {}

  /**
   * A host request of `tenant`: takes one from its `hostRequestsPerSec`; a registration
   * (`register`) must find the tenant under its `waitingWaits` quota too.
   * @throws RendezvousError rate_limited, quota_exceeded
   */
  async host(tenant: string, register: boolean): Promise<void> {
    await this.take({ tenant, rate: "hostRequestsPerSec", count: register ? "waitingWaits" : undefined }, 1);
  }

  /**
   * A producer request of `n` events: under the tenant's `bufferedEvents` quota, and `n`
   * taken from its `producerEventsPerSec` and from the producer's own `rateLimitPerSec`.
   * Undefined (nothing to wait for) when none of them is set.
   * @throws RendezvousError rate_limited, quota_exceeded (the promise rejects)
   */
  producer(
    p: { tenant: string; producer: string; rateLimitPerSec: number | undefined },
    n: number,
  ): Promise<void> | undefined {
    // no limit on it (the common case): nothing to take, and no promise to make
    if (p.rateLimitPerSec === undefined && this.store.quotas.free({ tenant: p.tenant, ...PRODUCER_QUOTAS })) {
      return undefined;
    }
    return this.take(
      {
        tenant: p.tenant,
        ...PRODUCER_QUOTAS,
        producer: { id: p.producer, perSec: p.rateLimitPerSec },
        n,
      },
      n,
    );
  }

  private async take(req: QuotaRequest, events: number): Promise<void> {
    const refusal = await this.store.quotas.check({ ...req, n: req.n ?? 1, now: this.now?.() });
    if (refusal === null) return;
    this.metrics.quotaRefusals.inc({ quota: refusal.quota, tenant: req.tenant });
    if (req.producer) {
      const reason = refusal.kind === "count" ? "quota_exceeded" : "rate_limited";
      this.metrics.eventsRejected.inc({ reason, tenant: req.tenant }, events);
    }
    throw quotaError(refusal);
  }
}
