/**
 * The HTTP port of `start` and `api`, checked before anything is started: a port another
 * process holds is refused in one line instead of failing at listen, after Redis and the
 * roles came up.
 */
import { isPortFree } from "@rendezvous/engine";
import { StartRefused } from "./refusal.js";

export function portInUse(host: string, port: number): StartRefused {
  return new StartRefused(
    `port ${port} on ${host} is in use (another rendezvous?): stop it, or pass --port or set PORT`,
  );
}

/** Throws StartRefused when `host:port` cannot be bound now; port 0 (any) always can. */
export async function ensurePortFree(host: string, port: number): Promise<void> {
  if (port !== 0 && !(await isPortFree(port, host))) throw portInUse(host, port);
}

/** An error of `listen` turned into the refusal it stands for (the port taken meanwhile). */
export function listenRefusal(err: unknown, host: string, port: number): unknown {
  return (err as NodeJS.ErrnoException | undefined)?.code === "EADDRINUSE" ? portInUse(host, port) : err;
}
