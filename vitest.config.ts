import { fileURLToPath } from "node:url";
import { defaultServerConditions } from "vite";
import { configDefaults, defineConfig } from "vitest/config";

const conditions = ["@rendezvous/source", ...defaultServerConditions];
/**
 * What the test workers resolve with, Node's own `--conditions` included (vitest passes these
 * to Node): without `module`, a bundlers' condition Node never sets, whose builds need not run
 * on Node (the OpenTelemetry packages' `module` builds import without file extensions).
 */
const nodeConditions = conditions.filter((c) => c !== "module");
const src = (pkg: string) => fileURLToPath(new URL(`./packages/${pkg}/src/index.ts`, import.meta.url));
/** Tests (and the global setup) run the workspace packages from their sources. */
const alias = {
  // a subpath entry before its package: an alias also matches `name/…`
  "@rendezvous/client/bullmq": fileURLToPath(new URL("./packages/client/src/bullmq.ts", import.meta.url)),
  ...Object.fromEntries(
    ["protocol", "engine", "http", "workers", "client", "server", "testkit"].map((p) => [`@rendezvous/${p}`, src(p)]),
  ),
};

/**
 * Scenarios that run a second time against a local 3-master Redis Cluster (project
 * `cluster`, whose `redisUrl` is `redis+cluster://…`), plus the cluster-only tests
 * (`*.cluster.test.ts`: failover, cluster specifics).
 */
const ON_CLUSTER = [
  "packages/engine/test/transitions.test.ts",
  "packages/engine/test/parked-deadlines.test.ts",
  "packages/engine/test/shapes.test.ts",
  "packages/engine/test/deliver.test.ts",
  "packages/engine/test/tokens.test.ts",
  "packages/engine/test/inspect.test.ts",
  "packages/engine/test/redis-url.test.ts",
  "packages/engine/test/quotas.test.ts",
  "packages/workers/test/roles.test.ts",
  "packages/workers/test/dispatch.test.ts",
  "packages/workers/test/one-step-ingest.test.ts",
  "packages/workers/test/handoff.test.ts",
  "packages/workers/test/scheduler.test.ts",
  "packages/server/test/crash.test.ts",
  "packages/server/test/e2e-api.test.ts",
  "packages/server/test/e2e-shapes.test.ts",
  "packages/server/test/e2e-errors.test.ts",
  "packages/server/test/e2e-fuzz.test.ts",
  "packages/server/test/sdk.test.ts",
  "packages/server/test/sdk-tokens.test.ts",
  "packages/server/test/tokens-http.test.ts",
  "packages/*/test/**/*.cluster.test.ts",
];

export default defineConfig({
  resolve: { conditions, alias },
  ssr: { resolve: { conditions: nodeConditions, externalConditions: ["@rendezvous/source"] } },
  test: {
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // 2 cores: a couple of workers keep the suite quick without starving Redis.
    maxWorkers: 2,
    projects: [
      {
        extends: true,
        test: {
          name: "redis",
          include: ["packages/*/test/**/*.test.ts"],
          exclude: [...configDefaults.exclude, "**/*.cluster.test.ts", "**/*.hostile.test.ts"],
          // the console's browser and page tests need its built files (packages/console/dist)
          globalSetup: ["packages/testkit/src/global-setup.ts", "packages/server/test/console-setup.ts"],
          sequence: { groupOrder: 0 },
        },
      },
      {
        extends: true,
        test: {
          name: "cluster",
          include: ON_CLUSTER,
          globalSetup: ["packages/testkit/src/cluster-setup.ts"],
          sequence: { groupOrder: 0 },
        },
      },
      {
        // Hostile clients against a real api process (packages/server/test/hostile/): they
        // measure the server's memory and the latency of legitimate requests, so they run
        // after the other projects (a later group), one file at a time, nothing beside them.
        extends: true,
        test: {
          name: "hostile",
          include: ["packages/*/test/**/*.hostile.test.ts"],
          globalSetup: ["packages/testkit/src/global-setup.ts"],
          fileParallelism: false,
          maxWorkers: 1,
          testTimeout: 60_000,
          hookTimeout: 60_000,
          sequence: { groupOrder: 1 },
        },
      },
    ],
  },
});
