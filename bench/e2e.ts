/**
 * bench:e2e — events/s and latency from ingest to the continuation job in BullMQ.
 * Usage: npm run bench:e2e [-- --quick] [-- --waits W --batch 100 --batches-in-flight 4]
 */
import { runFromSource } from "./lib/source.js";

await runFromSource(new URL("./suites/e2e.ts", import.meta.url));
