/**
 * The lock `rendezvous start` holds on its data directory while it runs an embedded
 * redis-server there: `<data-dir>/start.lock`, created exclusively, holding the owner's
 * PID. A second start on the same directory is refused before it starts anything, so two
 * redis-servers never share one AOF directory. A lock whose PID is gone (a start that was
 * SIGKILLed) is stale and taken over.
 */
import { closeSync, linkSync, mkdirSync, openSync, readFileSync, renameSync, unlinkSync, writeSync } from "node:fs";
import { join } from "node:path";
import { StartRefused } from "./refusal.js";

export const LOCK_FILE = "start.lock";

export interface DataDirLock {
  readonly path: string;
  /** removes the lock file if it is still ours */
  release(): void;
}

/** Whether the process is a zombie (Linux /proc: exited, not yet reaped by its parent). */
function zombie(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3) === "Z";
  } catch {
    return false; // no /proc (macOS) or gone
  }
}

/** Whether a live process has this PID (EPERM: it does, owned by someone else). */
function alive(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0 || pid === process.pid) return false;
  try {
    process.kill(pid, 0);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "EPERM") return false;
  }
  return !zombie(pid);
}

/** The PID in a lock file; undefined when the file is gone, NaN when it holds no PID. */
function holder(path: string): number | undefined {
  try {
    return Number.parseInt(readFileSync(path, "utf8"), 10);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw err;
  }
}

function refuse(dir: string, pid: number): never {
  throw new StartRefused(
    `${dir} is in use by another rendezvous start (pid ${pid}): stop it first, or give this one another --data-dir`,
  );
}

function tryCreate(path: string): boolean {
  let fd: number;
  try {
    fd = openSync(path, "wx", 0o644);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "EEXIST") return false;
    throw err;
  }
  try {
    writeSync(fd, `${process.pid}\n`);
  } finally {
    closeSync(fd);
  }
  return true;
}

/**
 * Takes the lock on `dir` (created if missing) or throws StartRefused naming the PID that
 * holds it. A stale lock is moved aside atomically (rename) before the retry, so of two
 * starts that find the same stale lock only one takes it; one that moved aside a lock
 * taken in the meantime by a live start puts it back and refuses.
 */
export function lockDataDir(dir: string): DataDirLock {
  mkdirSync(dir, { recursive: true });
  const path = join(dir, LOCK_FILE);
  for (let attempt = 0; attempt < 5; attempt++) {
    if (tryCreate(path)) {
      return {
        path,
        release() {
          if (holder(path) === process.pid) unlinkSync(path);
        },
      };
    }
    const pid = holder(path);
    if (pid === undefined) continue; // released meanwhile
    if (alive(pid)) refuse(dir, pid);
    const aside = `${path}.${process.pid}.stale`;
    try {
      renameSync(path, aside);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "ENOENT") continue; // another start moved it
      throw err;
    }
    const moved = holder(aside);
    if (moved !== undefined && moved !== pid && alive(moved)) {
      try {
        linkSync(aside, path);
      } catch {
        // someone holds the path again: they refuse or take it as it is
      }
      unlinkSync(aside);
      refuse(dir, moved);
    }
    unlinkSync(aside);
  }
  throw new StartRefused(`could not take the lock ${path}: other starts keep racing for it; try again`);
}
