/**
 * Failpoints for crash tests (docs/api.md): `RENDEZVOUS_FAILPOINTS="name=crash[,name=crash]"`
 * makes the process SIGKILL itself when it reaches that point. Parsed once; without
 * the variable `failpoint` is a no-op function.
 */
export const FAILPOINTS = [
  "ingest.after-append",
  "matcher.after-match",
  "dispatcher.after-enqueue",
  "dispatcher.after-annotate",
  "scheduler.after-timeout",
] as const;
export type FailpointName = (typeof FAILPOINTS)[number];

/** Parses the variable's value into the set of points that crash. */
export function parseFailpoints(spec: string | undefined): Set<string> {
  const armed = new Set<string>();
  for (const part of (spec ?? "").split(",")) {
    const [name, action] = part.split("=").map((s) => s.trim());
    if (!name) continue;
    if (action !== "crash")
      throw new Error(`RENDEZVOUS_FAILPOINTS: unknown action ${JSON.stringify(action)} for ${name}`);
    if (!(FAILPOINTS as readonly string[]).includes(name)) {
      throw new Error(
        `RENDEZVOUS_FAILPOINTS: unknown failpoint ${JSON.stringify(name)} (known: ${FAILPOINTS.join(", ")})`,
      );
    }
    armed.add(name);
  }
  return armed;
}

const armed = parseFailpoints(process.env.RENDEZVOUS_FAILPOINTS);

function crashAt(name: FailpointName): void {
  if (armed.has(name)) {
    process.stderr.write(`failpoint ${name}: crashing\n`);
    process.kill(process.pid, "SIGKILL");
  }
}

/** Is the failpoint armed in this process (a step that runs two actions as one keeps them apart for it)? */
export function failpointArmed(name: FailpointName): boolean {
  return armed.has(name);
}

/** Crash here if the failpoint is armed. */
export const failpoint: (name: FailpointName) => void = armed.size > 0 ? crashAt : () => {};
