/**
 * bench:timeouts — timeout precision and Redis memory per pending wait.
 * Usage: npm run bench:timeouts [-- --quick] [-- --waits N --spread 5-15 --memory-waits M]
 */
import { runFromSource } from "./lib/source.js";

await runFromSource(new URL("./suites/timeouts.ts", import.meta.url));
