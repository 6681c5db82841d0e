/**
 * bench:scale — e2e throughput with 1,000 and with 1,000,000 pending waits (scenario 5 of
 * `npm run bench`). Usage: npm run bench:scale [-- --quick] [-- --waits N --scale-waits M]
 * [-- --no-settle-aof: the method before, no AOF rewrite waited out]
 */
import { runFromSource } from "./lib/source.js";

await runFromSource(new URL("./suites/scale.ts", import.meta.url));
