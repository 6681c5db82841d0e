/**
 * Quotas that hold across processes (docs/api.md, Quotas). Everything is in Redis, in
 * the tenant's own slot `{<prefix>:q:<tenant>}` (KeyLayout.tenantQuota):
 *
 * - the counts (hash: `w` waiting waits, `b` buffered events), updated beside the
 *   transitions (`note`, a second step after the transition's own script: one slot per
 *   script), set from the wait indexes and the inbox (reads/quota-counts.ts) by `recount`
 *   when a process starts keeping them (`sync`), and set right by the scheduler's rounds
 *   (`drift`, then `adjust` of a difference two looks in a row agree on: QuotaRecount);
 * - the rate limiters (GCRA, lua/takeQuota-1.lua; fields of the same hash), taken from
 *   before a request is served.
 *
 * `check` is one script call per request (none when no limit applies to the request).
 *
 * The limits in force (docs/api.md, "Quotas of a tenant set through the admin API"), per
 * quota: the tenant's registry `limits` (read from the process's registry view, so a change
 * is in force as soon as the view has it), else the config file's own `quotas` of the
 * tenant (as read from the file at construction, before the registry replaces
 * `config.tenants`), else the file's top-level defaults.
 */
import { RendezvousError } from "@rendezvous/protocol";
import { type BatchCommand, execBatch } from "./batch.js";
import type { Config, QuotasConfig, TenantQuotas } from "./config.js";
import type { KeyLayout } from "./keys.js";
import { countCommands, sumCounts, type TenantUsage } from "./reads/quota-counts.js";
import type { RedisLike } from "./redis.js";
import { asReply, Code } from "./transitions/replies.js";
import { keyedCall, runScript } from "./transitions/run.js";

export type CountQuota = "waitingWaits" | "bufferedEvents";
export type RateQuota = "hostRequestsPerSec" | "producerEventsPerSec";

/** Why a request is refused: a count at its quota, or a rate limiter without room. */
export type QuotaRefusal =
  | { kind: "count"; quota: CountQuota; limit: number; usage: number; retryAfterSec: number }
  | { kind: "rate"; quota: RateQuota | "rateLimitPerSec"; limit: number; retryAfterSec: number };

/** What a request is checked against. */
export interface QuotaRequest {
  tenant: string;
  /** the count that must be under its quota */
  count?: CountQuota;
  /** the tenant's rate it takes from */
  rate?: RateQuota;
  /** a producer's own rate (`rateLimitPerSec`), taken from too */
  producer?: { id: string; perSec: number | undefined };
  /** requests or events the request takes @defaultValue 1 */
  n?: number;
  /** a fixed clock, ms (tests only); else Redis TIME */
  now?: number;
}

/** Changes to one tenant's counts. */
export interface CountDelta {
  waiting?: number;
  buffered?: number;
}

const FIELD: Record<CountQuota, "w" | "b"> = { waitingWaits: "w", bufferedEvents: "b" };

/** A tenant's counters against its indexes (Quotas.drift): what to add to each, which to remove. */
export interface CountDrift {
  off: Partial<Record<"w" | "b", number>>;
  stray: Array<"w" | "b">;
}

/** The refusal as the API answers it (docs/api.md, Quotas). */
export function quotaError(r: QuotaRefusal): RendezvousError {
  if (r.kind === "count") {
    return new RendezvousError("quota_exceeded", `the tenant is at its ${r.quota} quota`, {
      quota: r.quota,
      limit: r.limit,
      usage: r.usage,
      retryAfter: r.retryAfterSec,
    });
  }
  return new RendezvousError("rate_limited", undefined, {
    quota: r.quota,
    limit: r.limit,
    retryAfter: r.retryAfterSec,
  });
}

/** A tenant's `limits` as the registry holds them (undefined: none, or no such tenant). */
export type LimitsSource = (tenant: string) => Readonly<Record<string, number>> | undefined;

const QUOTA_NAMES = ["waitingWaits", "bufferedEvents", "hostRequestsPerSec", "producerEventsPerSec"] as const;

/** A registry value the quota can use: a count an integer ≥ 0, a rate a number > 0. */
function usable(quota: keyof TenantQuotas, v: unknown): v is number {
  if (typeof v !== "number" || !Number.isFinite(v)) return false;
  return quota === "waitingWaits" || quota === "bufferedEvents" ? Number.isInteger(v) && v >= 0 : v > 0;
}

/** The counter fields kept for a tenant with these limits: "w" waiting waits, "b" buffered events. */
function keptFields(limits: TenantQuotas): string {
  return (limits.waitingWaits !== null ? "w" : "") + (limits.bufferedEvents !== null ? "b" : "");
}

export class Quotas {
  /** the config file's own quotas of its tenants, as the file has them */
  readonly #fileQuotas = new Map<string, QuotasConfig>();
  #registry: LimitsSource | undefined;
  /** the Quotas whose limits these are, on another connection ({@link withConnection}) */
  #of: Quotas | undefined;
  /** per tenant, the counts kept ({@link keptFields}) when last looked at by this process */
  readonly #kept = new Map<string, string>();
  /** per tenant, its counters being set right after a change of its count quotas */
  readonly #syncing = new Map<string, Promise<void>>();

  constructor(
    private readonly redis: RedisLike,
    private readonly keys: KeyLayout,
    private readonly config: Pick<Config, "quotas" | "tenants">,
  ) {
    for (const [name, t] of Object.entries(config.tenants)) if (t.quotas) this.#fileQuotas.set(name, t.quotas);
  }

  /** Reads the tenants' registry `limits` from `source` from now on (the process's registry view). */
  follow(source: LimitsSource): void {
    if (this.#of) this.#of.follow(source);
    else this.#registry = source;
  }

  /**
   * The same quotas on another connection: its limits are always this one's (the
   * registry it follows, now or later, and the file's tenant quotas as this one read
   * them), its counts and limiters go over `redis`.
   */
  withConnection(redis: RedisLike, keys: KeyLayout = this.keys): Quotas {
    const q = new Quotas(redis, keys, { quotas: this.config.quotas, tenants: {} });
    q.#of = this.#of ?? this;
    return q;
  }

  /** The limits in force for `tenant`: registry `limits`, else the file's tenant quotas, else the defaults. */
  limits(tenant: string): TenantQuotas {
    if (this.#of) return this.#of.limits(tenant);
    const own = this.#registry?.(tenant);
    const file = this.#fileQuotas.get(tenant);
    const defaults = this.config.quotas;
    const limits = {} as TenantQuotas;
    for (const q of QUOTA_NAMES) {
      const set = own?.[q];
      const fromFile = file?.[q];
      limits[q] = usable(q, set) ? set : fromFile !== undefined ? fromFile : (defaults[q] ?? null);
    }
    return limits;
  }

  /**
   * Whether {@link check} of `req` would answer null at once: no limit applies to it, and
   * (for a request with a count) the tenant's kept counts are the ones this process last
   * saw, with no recount of them under way. Synchronous, so the common request of a
   * deployment without quotas takes no promise; when false, `check` as usual.
   */
  free(req: Pick<QuotaRequest, "tenant" | "count" | "rate" | "producer">): boolean {
    if (req.producer?.perSec !== undefined) return false;
    const limits = this.limits(req.tenant);
    if (req.rate !== undefined && limits[req.rate] !== null) return false;
    if (req.count === undefined) return true;
    if (limits[req.count] !== null) return false;
    const own = this.#of ?? this;
    return own.#kept.get(req.tenant) === keptFields(limits) && !own.#syncing.has(req.tenant);
  }

  /**
   * Checks a request against the tenant's quotas and takes from its limiters: null when
   * it may go on (then it has taken `n`), else why not (then it has taken nothing).
   * No Redis call when no limit applies.
   */
  async check(req: QuotaRequest): Promise<QuotaRefusal | null> {
    const limits = this.limits(req.tenant);
    if (req.count !== undefined) await this.sync(req.tenant);
    const countLimit = req.count === undefined ? null : limits[req.count];
    const perSec = req.rate === undefined ? null : limits[req.rate];
    const own = req.producer?.perSec ?? null;
    if (countLimit === null && perSec === null && own === null) return null;
    const call = keyedCall(
      "takeQuota",
      { quota: this.keys.tenantQuota(req.tenant).counts },
      {
        countField: countLimit === null || req.count === undefined ? "" : FIELD[req.count],
        countLimit: countLimit ?? "",
        rateField: perSec === null ? "" : req.rate === "hostRequestsPerSec" ? "h" : "p",
        perSec: perSec ?? "",
        ownField: own === null ? "" : `p:${req.producer?.id}`,
        ownPerSec: own ?? "",
        n: req.n ?? 1,
        now: req.now === undefined ? "" : String(req.now),
      },
    );
    const [code, a, b] = asReply(await runScript(this.redis, call), "takeQuota");
    if (code === Code.OK) return null;
    if (code === Code.OVER_QUOTA) {
      return {
        kind: "count",
        quota: req.count as CountQuota,
        limit: countLimit as number,
        usage: Number(a),
        retryAfterSec: 1,
      };
    }
    if (code === Code.OVER_RATE) {
      const retryAfterSec = Math.max(1, Math.ceil(Number(b) / 1000));
      return Number(a) === 1
        ? { kind: "rate", quota: req.rate as RateQuota, limit: perSec as number, retryAfterSec }
        : { kind: "rate", quota: "rateLimitPerSec", limit: own as number, retryAfterSec };
    }
    throw new RendezvousError("internal", `takeQuota: unexpected reply code ${code}`);
  }

  /**
   * Adds changes to tenants' counts (HINCRBY in each tenant's slot, one round trip). Run
   * after the transitions that made them; a count it fails to change is set right by the
   * next recount, so a failure is the caller's to log, not to retry. Only the counts a
   * tenant has a quota on are kept (a deployment without quotas writes nothing).
   */
  async note(deltas: ReadonlyMap<string, CountDelta>): Promise<void> {
    const commands: BatchCommand[] = [];
    for (const [tenant, d] of deltas) {
      const limits = this.limits(tenant);
      const key = this.keys.tenantQuota(tenant).counts;
      if (d.waiting && limits.waitingWaits !== null)
        commands.push({ key, add: (pl) => pl.hincrby(key, "w", d.waiting as number) });
      if (d.buffered && limits.bufferedEvents !== null)
        commands.push({ key, add: (pl) => pl.hincrby(key, "b", d.buffered as number) });
    }
    if (commands.length === 0) return;
    const replies = await execBatch(this.redis, commands);
    const failed = replies.find(([err]) => err);
    if (failed) throw failed[0];
  }

  /**
   * The tenant's counts: as its counters hold them for a count it has a quota on, else
   * counted from the indexes now (2 × partitions ZLEXCOUNTs each).
   */
  async usage(tenant: string): Promise<TenantUsage> {
    const limits = this.limits(tenant);
    await this.sync(tenant);
    const [w, b] = await this.redis.hmget(this.keys.tenantQuota(tenant).counts, "w", "b");
    const kept = { waitingWaits: Math.max(0, Number(w ?? 0)), bufferedEvents: Math.max(0, Number(b ?? 0)) };
    if (limits.waitingWaits !== null && limits.bufferedEvents !== null) return kept;
    const counted = (await this.count([tenant])).get(tenant) as TenantUsage;
    return {
      waitingWaits: limits.waitingWaits !== null ? kept.waitingWaits : counted.waitingWaits,
      bufferedEvents: limits.bufferedEvents !== null ? kept.bufferedEvents : counted.bufferedEvents,
    };
  }

  /**
   * Sets a tenant's counters right when the counts kept for it change (a count quota set
   * or removed, through the registry or the file): a newly kept count is recounted from
   * the indexes before it is checked (it was not kept, so its counter is stale or
   * absent), a count no longer kept is removed. A tenant seen for the first time by this
   * process is recounted only when a kept counter is absent (the processes that were up
   * when its quota changed have set it). Each process does it when it sees the change;
   * a failure is left to the next change or the recount rounds.
   */
  async sync(tenant: string): Promise<void> {
    const own = this.#of ?? this;
    const kept = keptFields(this.limits(tenant));
    const before = own.#kept.get(tenant);
    if (before === kept) return own.#syncing.get(tenant);
    own.#kept.set(tenant, kept);
    const key = this.keys.tenantQuota(tenant).counts;
    const run = (async () => {
      const dropped = (["w", "b"] as const).filter((f) => !kept.includes(f));
      if (before !== undefined && dropped.length > 0) await this.redis.hdel(key, ...dropped);
      if (kept === "") return;
      const fresh = before === undefined ? "" : [...kept].filter((f) => !before.includes(f)).join("");
      const absent = before === undefined ? await this.redis.hmget(key, ...kept) : [];
      if (fresh !== "" || absent.some((v) => v === null)) await this.recount([tenant]);
    })()
      .catch(() => undefined)
      .finally(() => {
        if (own.#syncing.get(tenant) === run) own.#syncing.delete(tenant);
      });
    own.#syncing.set(tenant, run);
    return run;
  }

  /** Tenants with a count quota (whose counters are kept): the ones the recount looks at. */
  counted(tenants: readonly string[]): string[] {
    return tenants.filter((t) => {
      const l = this.limits(t);
      return l.waitingWaits !== null || l.bufferedEvents !== null;
    });
  }

  /**
   * Counts the tenants' waiting waits and buffered events from the indexes and the inboxes
   * and sets the counters they keep (those of their count quotas) to them at once, adding
   * the difference from what each held at the count (an update landing meanwhile is kept);
   * the counters kept no longer are removed. A transition whose count update is in flight
   * at the count is counted twice until the scheduler's looks (`drift`) set it right. Two
   * round trips.
   */
  async recount(tenants: readonly string[]): Promise<Map<string, TenantUsage>> {
    const { counts, drifts } = await this.#look(tenants);
    await this.adjust(drifts);
    return counts;
  }

  /**
   * What the recount would change, without changing it (one round trip): per tenant, each
   * kept counter's difference from what the indexes and the inbox hold (`off`: to add to
   * the counter, absent when right; a kept counter that is absent is off by the whole
   * count) and the counters kept no longer (`stray`). Tenants with nothing to change are
   * left out. A difference can be a transition whose count update is still in flight (it
   * has committed, its HINCRBY has not landed): QuotaRecount (the scheduler's) adds one
   * only when two looks in a row find the same, so such an update is not counted twice.
   */
  async drift(tenants: readonly string[]): Promise<Map<string, CountDrift>> {
    return (await this.#look(tenants)).drifts;
  }

  /** The tenants' counts and their counters' drifts from them (one round trip). */
  async #look(
    tenants: readonly string[],
  ): Promise<{ counts: Map<string, TenantUsage>; drifts: Map<string, CountDrift> }> {
    const commands = countCommands(this.keys, tenants);
    const at = commands.length;
    for (const t of tenants) {
      const key = this.keys.tenantQuota(t).counts;
      commands.push({ key, add: (pl) => pl.hmget(key, "w", "b") });
    }
    const replies = await execBatch(this.redis, commands);
    const counts = sumCounts(this.keys, tenants, replies);
    const drifts = new Map<string, CountDrift>();
    tenants.forEach((tenant, i) => {
      const [err, held] = replies[at + i] ?? [null, [null, null]];
      if (err) throw err;
      const [w, b] = held as Array<string | null>;
      const c = counts.get(tenant) as TenantUsage;
      const kept = keptFields(this.limits(tenant));
      const drift: CountDrift = { off: {}, stray: [] };
      for (const [f, value, counted] of [
        ["w", w, c.waitingWaits],
        ["b", b, c.bufferedEvents],
      ] as const) {
        if (!kept.includes(f)) {
          if (value !== null) drift.stray.push(f);
        } else if (value === null || Number(value) !== counted) drift.off[f] = counted - Number(value ?? 0);
      }
      if (drift.stray.length > 0 || Object.keys(drift.off).length > 0) drifts.set(tenant, drift);
    });
    return { counts, drifts };
  }

  /** Adds each tenant's `off` to its counters and removes its `stray` ones (one round trip). */
  async adjust(drifts: ReadonlyMap<string, CountDrift>): Promise<void> {
    const commands: BatchCommand[] = [];
    for (const [tenant, d] of drifts) {
      const key = this.keys.tenantQuota(tenant).counts;
      for (const [f, by] of Object.entries(d.off)) commands.push({ key, add: (pl) => pl.hincrby(key, f, by) });
      if (d.stray.length > 0) commands.push({ key, add: (pl) => pl.hdel(key, ...d.stray) });
    }
    const failed = (await execBatch(this.redis, commands)).find(([err]) => err);
    if (failed) throw failed[0];
  }

  /**
   * The tenants' waiting waits and buffered events counted from the indexes (one round
   * trip): an any-of wait counts once (its extra members' count is subtracted).
   */
  async count(tenants: readonly string[]): Promise<Map<string, TenantUsage>> {
    return sumCounts(this.keys, tenants, await execBatch(this.redis, countCommands(this.keys, tenants)));
  }
}
