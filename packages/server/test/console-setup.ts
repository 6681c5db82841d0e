/**
 * vitest global setup (project `redis`): builds packages/console when its dist is
 * missing or older than its sources, once before any test, so the console tests
 * always drive the current UI (`npm ci` builds it too, through the root `prepare`).
 */
import { execFileSync } from "node:child_process";
import { readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const dir = fileURLToPath(new URL("../../console/", import.meta.url));

function newest(path: string): number {
  const st = statSync(path);
  if (!st.isDirectory()) return st.mtimeMs;
  return Math.max(0, ...readdirSync(path).map((name) => newest(join(path, name))));
}

export function setup(): void {
  let built = 0;
  try {
    built = statSync(join(dir, "dist/index.html")).mtimeMs;
  } catch {
    // not built
  }
  const sources = Math.max(...["src", "index.html", "vite.config.ts"].map((p) => newest(join(dir, p))));
  if (built >= sources) return;
  execFileSync(process.execPath, [join(dir, "scripts/prepare.mjs")], { stdio: "inherit" });
}
