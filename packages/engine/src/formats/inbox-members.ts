/**
 * The member layout of a partition's inbox (buffered events), the same as
 * lua/includes/inbox.lua: "<encoded match key><padded stream id><eventKey>", all
 * scores 0. The padded id ("%015d-%010d" of the stream id's two numbers) makes lexical
 * order stream order within a match key; encoded parts are prefix-free, so a range
 * from "[<prefix>" to "(<prefix>\xff" holds exactly the members under an encoded prefix.
 */
import { afterParts, decodeParts, encodeParts, prefixRange } from "../encoding.js";

/** Characters of a padded stream id. */
const PADDED_ID_LENGTH = 26;

export interface InboxMember {
  tenant: string;
  eventType: string;
  correlationId: string;
  /** the stream id, padded to fixed width */
  paddedStreamId: string;
  /** when the event was accepted (the stream id's time), ms */
  acceptedMs: number;
  /** the encoded event key (tenant, producer, eventId) */
  eventKey: string;
  producer: string;
  eventId: string;
}

/** The lexical range (ZRANGEBYLEX min, max) of a tenant's buffered events. */
export function inboxTenantRange(tenant: string): [string, string] {
  return prefixRange(encodeParts(tenant));
}

/** The parts of an inbox member. */
export function parseInboxMember(member: string): InboxMember {
  const [tenant = "", eventType = "", correlationId = ""] = decodeParts(member, 3);
  const rest = afterParts(member, 3);
  const paddedStreamId = rest.slice(0, PADDED_ID_LENGTH);
  const eventKey = rest.slice(PADDED_ID_LENGTH);
  const [, producer = "", eventId = ""] = decodeParts(eventKey, 3);
  return {
    tenant,
    eventType,
    correlationId,
    paddedStreamId,
    acceptedMs: Number(paddedStreamId.split("-")[0]),
    eventKey,
    producer,
    eventId,
  };
}
