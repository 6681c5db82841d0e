// `npm test`'s pretest hook: the suite needs three system programs beside Node. When one is
// missing it says so in one line and stops the run before any test starts (instead of a
// spawn ENOENT or a `null` exit status in the middle of the suite). Plain Node, no
// dependencies, no child processes: it only looks at files, so it takes milliseconds.
import { accessSync, constants, statSync } from "node:fs";
import { delimiter, join } from "node:path";

const INSTALL_DEBIAN = "apt-get install -y redis-server chromium docker-compose";
const INSTALL_MACOS =
  "brew install redis docker-compose && brew install --cask chromium, then CHROMIUM_PATH=/Applications/Chromium.app/Contents/MacOS/Chromium";
/** Node versions the project declares (package.json `engines`). */
const NODE_MIN = { 20: 19, 22: 12, 24: 0 };

function executable(path) {
  try {
    accessSync(path, constants.X_OK);
    return statSync(path).isFile();
  } catch {
    return false;
  }
}

function onPath(name, path) {
  return (path ?? "")
    .split(delimiter)
    .filter(Boolean)
    .some((dir) => executable(join(dir, name)));
}

function nodeSupported(version) {
  const [major, minor] = version.replace(/^v/, "").split(".").map(Number);
  if (major > 24) return true;
  return major in NODE_MIN && minor >= NODE_MIN[major];
}

/** What the suite needs and is missing, each as it should be named to the user. */
function missing(env = process.env, nodeVersion = process.version) {
  const chromium = env.CHROMIUM_PATH || "/usr/bin/chromium"; // as packages/server/test/console-browser.ts
  const out = [];
  if (!onPath("redis-server", env.PATH)) out.push("redis-server");
  if (!executable(chromium)) out.push(env.CHROMIUM_PATH ? `chromium (CHROMIUM_PATH=${chromium})` : "chromium");
  if (!onPath("docker-compose", env.PATH)) out.push("docker-compose");
  return { programs: out, node: nodeSupported(nodeVersion) ? undefined : nodeVersion };
}

/** The one line printed when something is missing, else undefined. */
function problem(env = process.env, nodeVersion = process.version) {
  const { programs, node } = missing(env, nodeVersion);
  const parts = [];
  if (programs.length > 0) {
    parts.push(
      `${programs.join(", ")} missing; install first: ${INSTALL_DEBIAN} (Debian/Ubuntu; macOS: ${INSTALL_MACOS})`,
    );
  }
  if (node) parts.push(`Node ${node} is not supported: use Node 22 or 24 (or 20.19+)`);
  return parts.length > 0 ? `npm test: ${parts.join("; ")}` : undefined;
}

const line = problem();
if (line) {
  process.stderr.write(`${line}\n`);
  process.exit(1);
}
