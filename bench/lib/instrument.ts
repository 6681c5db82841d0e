/**
 * Stage timing without touching the packages: wraps a method of one object (an
 * instance property shadows the prototype method) and records its calls, the time
 * they took, and the wall time during which at least one call was in flight (busy).
 * Busy time / run time is how much of the run that stage occupied; for a stage that
 * runs its calls one after another it is the stage's utilisation.
 */
export interface StageStats {
  calls: number;
  /** items handled (the length of the first array argument, if any) */
  items: number;
  /** sum of call durations (ms); overlapping calls count twice */
  totalMs: number;
  /** wall time with ≥ 1 call in flight (ms) */
  busyMs: number;
  maxMs: number;
}

export class Stages {
  readonly #stats = new Map<string, StageStats & { inFlight: number; busySince: number }>();

  /** Wraps `target[method]` under the stage name `name`. */
  wrap<T extends object>(name: string, target: T, method: keyof T & string): void {
    const original = target[method];
    if (typeof original !== "function") throw new Error(`${method} is not a method`);
    const s = { calls: 0, items: 0, totalMs: 0, busyMs: 0, maxMs: 0, inFlight: 0, busySince: 0 };
    this.#stats.set(name, s);
    const fn = original as (...args: unknown[]) => Promise<unknown>;
    Object.defineProperty(target, method, {
      configurable: true,
      writable: true,
      value: async function (this: unknown, ...args: unknown[]) {
        const t0 = performance.now();
        if (s.inFlight++ === 0) s.busySince = t0;
        try {
          return await fn.apply(this, args);
        } finally {
          const t1 = performance.now();
          s.calls++;
          // a call's items: its array argument's length, else the call is one item (`Queue.add`)
          const list = args.find(Array.isArray);
          s.items += list ? list.length : 1;
          s.totalMs += t1 - t0;
          s.maxMs = Math.max(s.maxMs, t1 - t0);
          if (--s.inFlight === 0) s.busyMs += t1 - s.busySince;
        }
      },
    });
  }

  /** Current numbers, and resets them. */
  take(): Map<string, StageStats> {
    const out = new Map<string, StageStats>();
    const now = performance.now();
    for (const [name, s] of this.#stats) {
      const busy = s.busyMs + (s.inFlight > 0 ? now - s.busySince : 0);
      out.set(name, { calls: s.calls, items: s.items, totalMs: s.totalMs, busyMs: busy, maxMs: s.maxMs });
      Object.assign(s, { calls: 0, items: 0, totalMs: 0, busyMs: 0, maxMs: 0, busySince: now });
    }
    return out;
  }
}
