/**
 * bench:api-path — the api's CPU per event on the producer path, against a bare fastify floor
 * and optionally another checkout (bench/suites/api-path.ts).
 * Usage: npm run bench:api-path [-- --quick] [-- --base <checkout>] [-- --profile] [-- --requests N] [-- --rounds R]
 */
import { runFromSource } from "./lib/source.js";

await runFromSource(new URL("./suites/api-path.ts", import.meta.url));
