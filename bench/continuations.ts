/**
 * bench:continuations — continuations delivered per second over HTTP claim vs the BullMQ transport.
 * Usage: npm run bench:continuations [-- --waits 2000]
 */
import { runFromSource } from "./lib/source.js";

await runFromSource(new URL("./suites/continuations.ts", import.meta.url));
