/**
 * A command that cannot go ahead for a reason the operator fixes: `start`'s data directory
 * is in use or its HTTP port taken, `doctor` finds no Redis to check. The CLI prints its message as one line
 * on stderr and exits 1, with no stack: nothing went wrong inside rendezvous.
 */
export class StartRefused extends Error {
  constructor(message: string) {
    super(message);
    this.name = "StartRefused";
  }
}

export function isStartRefused(err: unknown): err is StartRefused {
  return err instanceof StartRefused;
}
