/**
 * Per-test fixtures: the run's private Redis and a unique key prefix per test.
 * `trackOpen` resources are closed after each test; `guardClosed` resources must be
 * closed by the test itself, and a test that leaves one open fails.
 */
import { randomBytes } from "node:crypto";
import { afterEach, inject } from "vitest";

declare module "vitest" {
  export interface ProvidedContext {
    /** URL of the run's private redis-server (set by global-setup). */
    redisUrl: string;
  }
}

type Closable = {
  status?: string;
  quit?: () => Promise<unknown>;
  close?: () => Promise<unknown>;
  disconnect?: () => void;
};
const autoClosed = new Set<Closable>();
const guarded = new Map<Closable, string>();

/** URL of the run's private redis-server. */
export function redisUrl(): string {
  return inject("redisUrl");
}

/** A unique key prefix (also usable as a BullMQ prefix). */
export function uniquePrefix(label = "t"): string {
  return `${label}${randomBytes(5).toString("hex")}`;
}

async function close(resource: Closable): Promise<void> {
  if (resource.status === "end") return;
  if (resource.quit) await resource.quit().catch(() => resource.disconnect?.());
  else if (resource.close) await resource.close();
  else resource.disconnect?.();
}

/** A resource closed for the test when it ends. */
export function trackOpen<T extends Closable>(resource: T): T {
  autoClosed.add(resource);
  return resource;
}

/** A resource the test must close itself (`isClosed` tells whether it did). */
export function guardClosed<T extends Closable>(resource: T, label: string, isClosed: () => boolean): T {
  guarded.set(resource, label);
  closedChecks.set(resource, isClosed);
  return resource;
}
const closedChecks = new Map<Closable, () => boolean>();

afterEach(async () => {
  const leaked: string[] = [];
  for (const [resource, label] of guarded) {
    if (!(closedChecks.get(resource)?.() ?? true)) {
      leaked.push(label);
      await close(resource);
    }
  }
  guarded.clear();
  closedChecks.clear();
  for (const r of autoClosed) await close(r);
  autoClosed.clear();
  if (leaked.length > 0) throw new Error(`left open by the test: ${leaked.join(", ")}`);
});
