import { fileURLToPath } from "node:url";
import { defaultServerConditions } from "vite";
import { defineConfig } from "vitest/config";

const conditions = ["@rendezvous/source", ...defaultServerConditions];
const src = (pkg: string) => fileURLToPath(new URL(`./packages/${pkg}/src/index.ts`, import.meta.url));
/** Tests (and the global setup) run the workspace packages from their sources. */
const alias = Object.fromEntries(
  ["core", "ingest", "matcher", "scheduler", "client", "server", "testkit"].map((p) => [`@rendezvous/${p}`, src(p)]),
);

export default defineConfig({
  resolve: { conditions, alias },
  ssr: { resolve: { conditions, externalConditions: ["@rendezvous/source"] } },
  test: {
    include: ["packages/*/test/**/*.test.ts"],
    globalSetup: ["packages/testkit/src/global-setup.ts"],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // 2 cores: a couple of workers keep the suite quick without starving Redis.
    maxWorkers: 2,
  },
});
