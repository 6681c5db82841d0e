/**
 * The record formats of the Lua transitions (src/formats): event and dedup records,
 * wait records, remembered refusals, and their mapping to the API shapes.
 */

export {
  acceptedEventRecord,
  canonicalContent,
  dedupField,
  dedupMatchPartition,
  dedupRecord,
  eventField,
  eventRecordHead,
  eventRecordPrefix,
  parseEventRecord,
  type RawEvent,
  toEventRecord,
} from "./formats/event-record.js";
export { iso } from "./formats/iso.js";
export { type Rejection, rejectionRecord, toRejections } from "./formats/rejection-record.js";
export {
  parseWaitRecord,
  type RawEventRef,
  type RawWait,
  registrationRecord,
  toWait,
  waitOf,
} from "./formats/wait-record.js";
