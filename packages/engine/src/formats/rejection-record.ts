/**
 * The refusals remembered per match key (hash field "<mk>" of the rejected hash): a
 * JSON array of {pr, id?, reason, detail?, at}, newest last; recordRejection appends one
 * and stamps its time.
 */

import { toWellFormed } from "@rendezvous/protocol";
import { iso } from "./iso.js";

/** A refused event as remembered for `explain` (no payload). */
export interface Rejection {
  producer: string;
  eventId: string | null;
  /** an error code of docs/api.md: invalid_event, forbidden_event_type, unauthorized, … */
  reason: string;
  detail: string | null;
  at: string;
}

/** Most characters of a refusal's detail that are kept. */
const DETAIL_KEPT = 500;

/** One refusal as recordRejection takes it, JSON {pr, id?, reason, detail?}. */
export function rejectionRecord(r: { producer: string; eventId?: string; reason: string; detail?: string }): string {
  // well-formed: the script's cjson refuses the escape of a lone surrogate
  return JSON.stringify({
    pr: r.producer,
    id: r.eventId === undefined ? undefined : toWellFormed(r.eventId),
    reason: r.reason,
    detail: r.detail === undefined ? undefined : toWellFormed(r.detail.slice(0, DETAIL_KEPT)),
  });
}

/** The API view of the stored refusals of a match key, oldest first. */
export function toRejections(raw: string): Rejection[] {
  const list = JSON.parse(raw) as Array<{ pr: string; id?: string; reason: string; detail?: string; at: number }>;
  return list.map((r) => ({
    producer: r.pr,
    eventId: r.id ?? null,
    reason: r.reason,
    detail: r.detail ?? null,
    at: iso(r.at),
  }));
}
