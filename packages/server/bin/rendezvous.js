#!/usr/bin/env -S node --max-semi-space-size=64
// The rendezvous CLI. Runs the built JavaScript (npm run build) when present, else
// the TypeScript sources through tsx (a dev dependency installed by npm ci).
import { existsSync } from "node:fs";
import { fileURLToPath, pathToFileURL } from "node:url";

// A SIGTERM/SIGINT that arrives while the process is still loading is remembered
// and honoured (drain, exit 0) as soon as the roles have started.
const early = [];
const remember = (signal) => early.push(signal);
process.on("SIGTERM", remember);
process.on("SIGINT", remember);
if (process.env.RENDEZVOUS_TRACE_BOOT) process.stderr.write("rendezvous: loading (signals are held)\n");
globalThis.__rendezvousEarlySignals = {
  signals: early,
  release: () => {
    process.off("SIGTERM", remember);
    process.off("SIGINT", remember);
  },
};

const built = fileURLToPath(new URL("../dist/cli.js", import.meta.url));
if (existsSync(built) && !process.env.RENDEZVOUS_FROM_SOURCE) {
  await import(pathToFileURL(built).href);
} else {
  const { register } = await import("tsx/esm/api");
  register({ tsconfig: fileURLToPath(new URL("../../../tsconfig.source.json", import.meta.url)) });
  await import(new URL("../src/cli.ts", import.meta.url).href);
}
