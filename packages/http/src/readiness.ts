/**
 * Whether Redis takes writes now, for /readyz: a write probe, cached for a short while.
 *
 * A PING says Redis answers, not that it takes writes: at maxmemory (noeviction) every
 * write is refused while reads and PING still work, and a replica, a master refusing
 * writes after a failed save (MISCONF) or without its replicas (NOREPLICAS) refuses them
 * too. So the probe is one `SET` of a key of our prefix with an expiry (one slot:
 * cluster-safe, constant memory), which Redis refuses in each of those cases with the
 * error the API routes would get. Reading `INFO memory` instead would see only the
 * memory case, and only approximately (Redis does not count every buffer against
 * maxmemory). The result is kept for `ttlMs`, so frequent /readyz polls cost at most one
 * write per TTL, and concurrent polls share one probe.
 */
import { PartitionReader, type Resources, withinCommandTimeout } from "@rendezvous/engine";
import { type RedisTrouble, redisTrouble } from "./http-errors.js";

export type Readiness = { ok: true } | { ok: false; reason: RedisTrouble };

export interface ReadinessOptions {
  /** how long a probe's result is reused, ms @defaultValue 1000 */
  ttlMs?: number;
  /** longest a probe waits for Redis, ms @defaultValue 1000 */
  timeoutMs?: number;
  /** @defaultValue Date.now */
  now?: () => number;
}

/** How long the probe key outlives the last probe (it is rewritten every TTL while polled). */
const PROBE_KEY_TTL_MS = 60_000;

export class RedisReadiness {
  readonly #res: Resources;
  readonly #ttlMs: number;
  readonly #timeoutMs: number;
  readonly #now: () => number;
  #last: { at: number; result: Readiness } | undefined;
  #probing: Promise<Readiness> | undefined;

  constructor(res: Resources, opts: ReadinessOptions = {}) {
    this.#res = res;
    this.#ttlMs = opts.ttlMs ?? 1000;
    this.#timeoutMs = opts.timeoutMs ?? 1000;
    this.#now = opts.now ?? Date.now;
  }

  /** Redis takes writes, or why not. Never waits longer than the probe timeout. */
  async check(): Promise<Readiness> {
    // without a connection a command would wait in the offline queue: no probe needed
    if (this.#res.redis.status !== "ready") return { ok: false, reason: "redis_down" };
    const last = this.#last;
    if (last && this.#now() - last.at < this.#ttlMs) return last.result;
    this.#probing ??= this.#probe().then((result) => {
      this.#last = { at: this.#now(), result };
      this.#probing = undefined;
      return result;
    });
    return this.#probing;
  }

  async #probe(): Promise<Readiness> {
    const reader = new PartitionReader({ redis: this.#res.redis, keys: this.#res.store.keys });
    const write = reader.writeReadyProbe(String(this.#now()), PROBE_KEY_TTL_MS);
    return withinCommandTimeout(this.#timeoutMs, write).then(
      (): Readiness => ({ ok: true }),
      (err: unknown): Readiness => ({ ok: false, reason: redisTrouble(err) ?? "redis_down" }),
    );
  }
}
