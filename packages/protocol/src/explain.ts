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
