/**
 * Event type patterns, as a producer's `eventTypes` and a continuation group's take them:
 * an exact type, a prefix ending in `*`, or `*` alone.
 */
import { z } from "zod";

export const EventTypePattern = z
  .string()
  .regex(/^[a-z0-9][a-z0-9._-]{0,127}\*?$|^\*$/, "an event type, optionally ending in *");

/** Whether an event type matches any of the patterns (exact, or by the prefix before `*`). */
export function typeMatcher(patterns: readonly string[]): (eventType: string) => boolean {
  const exact = new Set(patterns.filter((p) => !p.endsWith("*")));
  const prefixes = patterns.filter((p) => p.endsWith("*")).map((p) => p.slice(0, -1));
  return (eventType) => exact.has(eventType) || prefixes.some((prefix) => eventType.startsWith(prefix));
}
