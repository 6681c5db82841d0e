/** What `GET /v1/waits/{id}/explain` answers (docs/api.md, explain). */
import type { WaitState } from "./schemas.js";

/** A buffered event that nearly matched a wait. */
export interface NearMiss {
  producer: string;
  id: string;
  type: string;
  correlationId: string;
  acceptedAt: string;
  /** what differs from the wait's match key */
  differs: "correlationId" | "type";
}

export type Verdict =
  | "resolved"
  | "timed_out"
  | "cancelled"
  | "backlog"
  | "correlation_mismatch"
  | "rejected_signal"
  | "no_signal";

export interface Explanation {
  state: WaitState;
  verdict: Verdict;
  details: Record<string, unknown>;
}

/** What `explain` adds to the details of a waiting shaped wait (docs/api.md, Wait shapes). */
export interface ShapeProgress {
  /** how many distinct events the wait collected */
  collected: number;
  /** how many it needs */
  count: number;
  /** its types of which no event arrived yet */
  missingTypes: string[];
  /** e.g. "2 of 3 events arrived" */
  summary: string;
}

/** The progress of a shaped wait, from its API view (null for a plain wait). */
export function shapeProgress(wait: {
  eventType: string;
  eventTypes?: string[] | undefined;
  count?: number | undefined;
  collected?: Array<{ type: string }> | undefined;
}): ShapeProgress | null {
  if (wait.count === undefined) return null;
  const got = wait.collected ?? [];
  const types = wait.eventTypes ?? [wait.eventType];
  const missingTypes = types.filter((t) => !got.some((e) => e.type === t));
  const count = wait.count;
  return {
    collected: got.length,
    count,
    missingTypes,
    summary: `${got.length} of ${count} event${count === 1 ? "" : "s"} arrived`,
  };
}
