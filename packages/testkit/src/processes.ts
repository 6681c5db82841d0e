/**
 * Real child processes of the rendezvous CLI for process-level tests (crash,
 * restart, failpoints, SIGTERM). They run the current sources (tsx) and are
 * killed by PID if a test leaves one behind.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { fileURLToPath } from "node:url";

const bin = fileURLToPath(new URL("../../server/bin/rendezvous.js", import.meta.url));
const live = new Set<ChildProcess>();
process.on("exit", () => {
  for (const c of live) c.kill("SIGKILL");
});

export interface CliProcess {
  readonly child: ChildProcess;
  readonly pid: number;
  /** everything printed so far (stdout + stderr) */
  output(): string;
  /** what it printed on stderr alone */
  errors(): string;
  /** resolves with the first match of `pattern` in the output */
  waitFor(pattern: RegExp, ms?: number): Promise<RegExpMatchArray>;
  /** resolves when the process has exited */
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** SIGTERM and wait for the exit */
  terminate(ms?: number): Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

export function spawnCli(args: string[], env: Record<string, string | undefined> = {}): CliProcess {
  const child = spawn(process.execPath, [bin, ...args], {
    env: { ...process.env, RENDEZVOUS_FROM_SOURCE: "1", LOG_LEVEL: "info", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  live.add(child);
  let out = "";
  let err = "";
  const listeners = new Set<() => void>();
  const onData = (d: Buffer) => {
    out += d.toString();
    for (const l of listeners) l();
  };
  child.stdout?.on("data", onData);
  child.stderr?.on("data", (d: Buffer) => {
    err += d.toString();
    onData(d);
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once("exit", (code, signal) => {
      live.delete(child);
      for (const l of listeners) l();
      resolve({ code, signal });
    }),
  );
  const handle: CliProcess = {
    child,
    pid: child.pid as number,
    output: () => out,
    errors: () => err,
    exited,
    waitFor(pattern, ms = 20_000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          const m = out.match(pattern);
          if (m) {
            listeners.delete(check);
            clearTimeout(timer);
            resolve(m);
          } else if (child.exitCode !== null || child.signalCode !== null) {
            listeners.delete(check);
            clearTimeout(timer);
            reject(new Error(`process exited before ${pattern}:\n${out}`));
          }
        };
        const timer = setTimeout(() => {
          listeners.delete(check);
          reject(new Error(`timed out waiting for ${pattern}:\n${out}`));
        }, ms);
        listeners.add(check);
        check();
      });
    },
    async terminate(ms = 15_000) {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
      const timer = setTimeout(() => child.kill("SIGKILL"), ms);
      const r = await exited;
      clearTimeout(timer);
      return r;
    },
  };
  return handle;
}
