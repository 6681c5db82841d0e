/** annotateWaits (lua/annotateWaits-1.lua): one timeline entry of a kind on several waits of a partition, no record replied. */

import type { KeyLayout } from "../keys.js";
import { clock, type ScriptCall, transitionCall } from "./run.js";

/** An internal timeline entry written to many waits at once. */
export interface BatchAnnotation {
  waitId: string;
  what: "continuation_dispatched" | "sweeper_rescheduled" | "duplicate_ignored";
  /** merged into the entry (a JSON object; neither `w` nor `at`) */
  detail: Record<string, unknown>;
  /** skip when the timeline already has this entry (same kind and detail) */
  once?: boolean;
}

/**
 * The calls that record `entries`: one per partition and kind (entry kind and `once`);
 * a wait id that names no partition is left out.
 */
export function annotateWaitsCalls(keys: KeyLayout, entries: Iterable<BatchAnnotation>, now?: number): ScriptCall[] {
  const groups = new Map<string, { p: number; what: BatchAnnotation["what"]; once: boolean; pairs: string[] }>();
  for (const { waitId, what, detail, once = false } of entries) {
    const p = keys.waitPartition(waitId);
    if (p === null) continue;
    const kind = `${p} ${what} ${once}`;
    let group = groups.get(kind);
    if (!group) {
      group = { p, what, once, pairs: [] };
      groups.set(kind, group);
    }
    group.pairs.push(waitId, JSON.stringify(detail));
  }
  return [...groups.values()].map(({ p, what, once, pairs }) =>
    transitionCall("annotateWaits", keys.partition(p), { now: clock(now), what, once: once ? "1" : "", pairs }),
  );
}
