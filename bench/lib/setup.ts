/**
 * What both benchmarks share: resources on the private Redis, realistic ids, the
 * results file.
 */
import { randomUUID } from "node:crypto";
import { mkdirSync, writeFileSync } from "node:fs";
import { cpus, loadavg, totalmem } from "node:os";
import { createResources, parseConfig, type Resources } from "@rendezvous/engine";
import { pino } from "pino";
import { parseArgs } from "./args.js";

export const TENANT = "acme";
export const EVENT_TYPE = "order.paid";
export const POSITION = "step-3#1";
export const PRODUCER = "payments";

/** Logs go to stderr (numbers to stdout): warnings and errors unless `--log-level` says otherwise. */
const logger = pino({ level: parseArgs().string("log-level", "warn") }, pino.destination(2));

export function resources(url: string, prefix: string, partitions: number): Resources {
  return createResources({
    redisUrl: url,
    prefix,
    config: parseConfig({ partitions }),
    logger,
  });
}

/** A run id as hosts make them. */
export function runId(): string {
  return `run-${randomUUID()}`;
}

/** `ord_` and 12 digits, unique per i within a run (offset by a random base). */
export function correlationIds(count: number): string[] {
  const base = Math.floor(Math.random() * 8e11) + 1e11;
  return Array.from({ length: count }, (_, i) => `ord_${String(base + i).padStart(12, "0")}`);
}

export function machine(): string {
  const c = cpus();
  return `${c.length} cores (${c[0]?.model.trim() ?? "?"}), ${Math.round(totalmem() / 2 ** 30)} GiB, Node ${process.version}`;
}

/** Writes the run's numbers to bench/results/<name>-<time>.json (git-ignored). */
export function saveResults(name: string, data: unknown): string {
  const dir = new URL("../results/", import.meta.url);
  mkdirSync(dir, { recursive: true });
  const file = new URL(`${name}-${new Date().toISOString().replace(/[:.]/g, "-")}.json`, dir);
  writeFileSync(file, `${JSON.stringify(data, null, 2)}\n`);
  return file.pathname;
}

/** The 1/5/15-minute load averages: other processes on the machine skew every number. */
export function load(): string {
  return loadavg()
    .map((l) => l.toFixed(2))
    .join(" / ");
}
