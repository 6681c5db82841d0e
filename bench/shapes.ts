/**
 * bench:shapes — the wait shapes side by side: match events/s and memory per pending wait.
 * Usage: npm run bench:shapes [-- --quick] [-- --waits N]
 */
import { runFromSource } from "./lib/source.js";

await runFromSource(new URL("./suites/shapes.ts", import.meta.url));
