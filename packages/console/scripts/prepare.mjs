// Root `prepare` hook (runs after `npm ci` / `npm install`): builds the console into
// packages/console/dist so that `npm ci && npm start` serves a working /console.
// A no-op where the build tools are absent (`npm ci --omit=dev`: the files were built
// before, e.g. by `npm run build` in the Docker build stage).
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";

const here = fileURLToPath(new URL("..", import.meta.url));
let viteBin;
try {
  viteBin = fileURLToPath(new URL("./bin/vite.js", import.meta.resolve("vite/package.json")));
  import.meta.resolve("@vitejs/plugin-react");
  import.meta.resolve("react");
} catch {
  console.log("console: vite is not installed (production install): not building packages/console");
  process.exit(0);
}
const r = spawnSync(process.execPath, [viteBin, "build", "--logLevel", "warn"], { cwd: here, stdio: "inherit" });
if (r.status !== 0) {
  console.error("console: vite build failed");
  process.exit(r.status ?? 1);
}
console.log("console: built packages/console/dist");
