/**
 * bench:blackbox — the resolve path as users pay for it: real `rendezvous` processes, HTTP
 * producers, a host continuation worker, CPU per event from /proc (bench/suites/blackbox.ts).
 * Usage: npm run bench:blackbox [-- --quick] [-- --events N] [-- --singles M] [-- --configs start,split] [-- --json]
 *   [-- --breakdown] [-- --profile single|batch|http] (where the CPU goes: docs/benchmarks.md, bench:blackbox)
 */
import { runFromSource } from "./lib/source.js";

await runFromSource(new URL("./suites/blackbox.ts", import.meta.url));
