/**
 * Paces a worker's steps: one step at a time (FIFO, whichever partition it is for),
 * and after a *full* step (as many items as the step size) the next one waits until
 * `restRatio` times that step's duration has passed since it ended (at most
 * MAX_REST_MS; below 1 ms one turn of the event loop). A step that was not full owes
 * no rest, and a step that comes after the rest is over starts at once, so a lone item
 * is never delayed; a backlog takes at most about 1 / (1 + restRatio) of the process's
 * time, and what else runs in the process (the API under `rendezvous start`) is served
 * between steps.
 */
import { setImmediate as nextTurn, setTimeout as sleep } from "node:timers/promises";

/** The longest rest between two steps, ms: a slow step (a busy Redis) does not stall a backlog for long. */
export const MAX_REST_MS = 50;

export interface PacerOptions {
  /** items in a full step */
  step: number;
  /** rest after a full step, as a multiple of its duration (0: one turn of the event loop) */
  restRatio: number;
}

export class Pacer {
  readonly step: number;
  readonly restRatio: number;
  #tail: Promise<unknown> = Promise.resolve();
  /** performance.now() before which the next step does not start; null: no rest owed */
  #restUntil: number | null = null;

  constructor(o: PacerOptions) {
    this.step = Math.max(1, Math.floor(o.step));
    this.restRatio = Math.max(0, o.restRatio);
  }

  /** Runs `work` (a step of `size` items) after the steps queued before it and the rest they owe. */
  run<T>(size: number, work: () => Promise<T>): Promise<T> {
    const turn = this.#tail.then(async () => {
      await this.#rest();
      const t0 = performance.now();
      try {
        return await work();
      } finally {
        if (size >= this.step) {
          const end = performance.now();
          this.#restUntil = end + Math.min(MAX_REST_MS, (end - t0) * this.restRatio);
        }
      }
    });
    this.#tail = turn.catch(() => undefined);
    return turn;
  }

  async #rest(): Promise<void> {
    if (this.#restUntil === null) return;
    const left = this.#restUntil - performance.now();
    this.#restUntil = null;
    if (left >= 1) await sleep(left);
    // right behind a full step: let the event loop serve what is waiting first
    else if (left > -1) await nextTurn();
  }
}
