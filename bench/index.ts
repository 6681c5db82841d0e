/**
 * bench — every scenario (docs/performance.md) in one run against one private Redis.
 * Usage: npm run bench [-- --quick] [-- --fsync always]
 */
import { runFromSource } from "./lib/source.js";

await runFromSource(new URL("./suites/all.ts", import.meta.url));
