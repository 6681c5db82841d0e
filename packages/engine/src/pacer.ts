/**
 * Paces background work in steps: one step at a time (FIFO, whoever queued it), and
 * after a *full* step (as many items as its caller's step size) the next one waits
 * until `restRatio` times that step's duration has passed since it ended (at most
 * MAX_REST_MS; right behind it, one turn of the event loop). A step that was not full
 * owes no rest, and one that comes after the rest is over starts at once, so a lone
 * item is never delayed. A backlog then takes at most about 1 / (1 + restRatio) of the
 * process's time, and what else runs in the process (the API under `rendezvous
 * start`) is served between steps. One pacer shared by the scheduler and the
 * dispatcher of a process keeps their steps from running back to back; each of them
 * queues at most one step at a time (a `lane`), so they take turns, whatever number of
 * partitions the dispatcher reads in parallel.
 */
import { setImmediate as nextTurn, setTimeout as sleep } from "node:timers/promises";

/** The longest rest between two steps, ms: a slow step (a busy Redis) does not stall a backlog for long. */
export const MAX_REST_MS = 50;

export class Pacer {
  /** rest after a full step, as a multiple of its duration (0: one turn of the event loop) */
  readonly restRatio: number;
  #tail: Promise<unknown> = Promise.resolve();
  /** performance.now() before which the next step does not start; null: no rest owed */
  #restUntil: number | null = null;

  constructor(restRatio = 1) {
    this.restRatio = Math.max(0, restRatio);
  }

  /** Runs `work` after the steps queued before it and the rest they owe; `full`: it owes a rest after. */
  run<T>(full: boolean, work: () => Promise<T>): Promise<T> {
    const turn = this.#tail.then(async () => {
      await this.#rest();
      const t0 = performance.now();
      try {
        return await work();
      } finally {
        if (full) {
          const end = performance.now();
          this.#restUntil = end + Math.min(MAX_REST_MS, (end - t0) * this.restRatio);
        }
      }
    });
    this.#tail = turn.catch(() => undefined);
    return turn;
  }

  /** A lane of this pacer: its steps run one after another, each queued only when the one before it is done. */
  lane(): Pacer["run"] {
    let tail: Promise<unknown> = Promise.resolve();
    return <T>(full: boolean, work: () => Promise<T>): Promise<T> => {
      const turn = tail.then(() => this.run(full, work));
      tail = turn.catch(() => undefined);
      return turn;
    };
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
