import { defaultServerConditions } from "vite";
import { defineConfig } from "vitest/config";

const conditions = ["@rendezvous/source", ...defaultServerConditions];

export default defineConfig({
  resolve: { conditions },
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
