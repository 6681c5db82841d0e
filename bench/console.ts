/**
 * bench:console — the operator console with 100,000 waits: server time of the first
 * waits page (and the overview) over several samples.
 * Usage: npm run bench:console [-- --waits N --samples N --partitions P]
 */
import { runFromSource } from "./lib/source.js";

await runFromSource(new URL("./suites/console.ts", import.meta.url));
