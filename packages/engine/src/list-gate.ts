/**
 * A process-wide bound on the wait records that list requests hold at once. Each list
 * request takes a lease; before it reads records it asks the gate for their stored size,
 * and it gives everything back when its answer has been sent. A request that already
 * holds records never waits: when the gate has no room it ends its page early (with a
 * `nextCursor`). A request that holds nothing waits its turn (first come, first served),
 * at most `waitMs`, then gets `503 unavailable` with `Retry-After`. Waiters hold nothing,
 * and holders never wait, so no lease can block another forever.
 *
 * Why: each record read becomes several copies in the API (the reply, the parsed
 * record, its metadata, the answer), and V8 lets the old generation grow to a few times
 * its live size before collecting, so the process grows with the bytes held at once:
 * four clients walking listings of 1 MiB-metadata waits grew the API by 190–210 MiB
 * with 4 MiB pages and no gate, 110–135 MiB with 2 MiB pages and a 4 MiB gate.
 */
import { RendezvousError } from "@rendezvous/protocol";

interface Waiter {
  bytes: number;
  grant: () => void;
}

export class ListGate {
  /** bytes of records all leases may hold together (a single record larger than it is let through alone) */
  readonly capacity: number;
  /** longest a lease that holds nothing waits for room */
  readonly waitMs: number;
  #held = 0;
  readonly #queue: Waiter[] = [];

  constructor(capacity: number, waitMs = 10_000) {
    this.capacity = capacity;
    this.waitMs = waitMs;
  }

  /** Bytes held by every lease now. */
  get held(): number {
    return this.#held;
  }

  /** Leases waiting for room. */
  get waiting(): number {
    return this.#queue.length;
  }

  lease(): ListLease {
    return new ListLease(this);
  }

  /** @internal whether `bytes` more fit now (for a lease that holds nothing, anything fits an empty gate) */
  fits(bytes: number, alone: boolean): boolean {
    return (alone && this.#held === 0) || this.#held + bytes <= this.capacity;
  }

  /** @internal */
  hasWaiters(): boolean {
    return this.#queue.length > 0;
  }

  /** @internal */
  take(bytes: number): void {
    this.#held += bytes;
  }

  /** @internal */
  give(bytes: number): void {
    this.#held -= bytes;
    this.#wake();
  }

  /** @internal waits until `bytes` fit (taken on the waiter's behalf), at most waitMs */
  wait(bytes: number): Promise<void> {
    return new Promise((resolve, reject) => {
      const waiter: Waiter = {
        bytes,
        grant: () => {
          clearTimeout(timer);
          resolve();
        },
      };
      const timer = setTimeout(() => {
        const i = this.#queue.indexOf(waiter);
        if (i >= 0) this.#queue.splice(i, 1);
        reject(
          new RendezvousError("unavailable", "too many large list requests at once; retry", {
            reason: "list_busy",
            retryAfter: 1,
          }),
        );
      }, this.waitMs);
      this.#queue.push(waiter);
      this.#wake();
    });
  }

  #wake(): void {
    while (this.#queue.length > 0) {
      const next = this.#queue[0] as Waiter;
      if (!this.fits(next.bytes, true)) return;
      this.#queue.shift();
      this.#held += next.bytes;
      next.grant();
    }
  }
}

/** One list request's share of a {@link ListGate}. */
export class ListLease {
  readonly #gate: ListGate;
  #held = 0;
  #released = false;

  constructor(gate: ListGate) {
    this.#gate = gate;
  }

  /**
   * How many of the records of `sizes` (stored bytes, in order) this request may read
   * now; their bytes are held until {@link release}. Holding nothing, it waits for the
   * first one; holding some, it takes what fits without waiting (0 = end the page).
   * @throws RendezvousError unavailable (reason `list_busy`) when the wait passes waitMs
   */
  async admit(sizes: number[]): Promise<number> {
    if (this.#released || sizes.length === 0) return 0;
    const gate = this.#gate;
    const first = sizes[0] as number;
    let k = 0;
    if (this.#held === 0) {
      if (gate.hasWaiters() || !gate.fits(first, true)) {
        // first come, first served; the gate takes the bytes on this lease's behalf
        await gate.wait(first);
        if (this.#released) {
          gate.give(first); // the request ended (its client went away) while it waited
          return 0;
        }
        this.#held += first;
        k = 1;
      }
    } else if (gate.hasWaiters()) {
      return 0; // others wait for room: leave it to them
    }
    let bytes = 0;
    while (k < sizes.length && !gate.hasWaiters()) {
      const size = sizes[k] as number;
      if (!gate.fits(bytes + size, this.#held === 0 && k === 0)) break;
      bytes += size;
      k++;
    }
    gate.take(bytes);
    this.#held += bytes;
    return k;
  }

  /** Gives back everything this request holds (idempotent). */
  release(): void {
    if (this.#released) return;
    this.#released = true;
    const held = this.#held;
    this.#held = 0;
    if (held > 0) this.#gate.give(held);
  }
}
