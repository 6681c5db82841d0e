// Where the built console lives (vite build → dist/). The server serves this folder at /console.
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";

export const consoleDir = fileURLToPath(new URL("./dist/", import.meta.url));

/** Whether the console has been built (dist/index.html exists). */
export function consoleBuilt() {
  return existsSync(new URL("./dist/index.html", import.meta.url));
}
