--[[
  acceptEvents: appendEvents and, in the same step, the match of what it appended, for
  the events of a batch whose MATCH KEY lies in this partition: the one-process
  deployment's ingest (`rendezvous start`, no failpoint armed, not tracing), whose
  matcher would otherwise be woken by the entry only to run matchEvent on it. The
  append is appendEvents' (ARGV[1..3], traces last). The match is matchEvent's, for
  each appended event in order, and happens only when the matchers' group has caught
  up: no entry of the stream undelivered, none delivered and not acknowledged (the
  event then comes after every event before it, as the matcher would take it). The
  group is then moved past the entry (XGROUP SETID with its entries-read count one
  more; where Redis does not tell that count, a read into the matchers' consumer
  `ARGV[7]` and an ack), so no matcher reads it again. Otherwise it is appended only,
  and the matcher takes it as it takes every entry. The group is moved last, so a
  match that raises leaves the entry undelivered: never acknowledged unmatched.

  KEYS[1] stream     {p}:s   stream of accepted events
  KEYS[2] events     {p}:e   hash "e:<eventKey>" -> event record
  KEYS[3] expiry     {p}:x   zset of records to remove
  KEYS[4] waits      {p}:w   hash waitId -> wait record
  KEYS[5] waiting    {p}:iw  lex zset "<index key><wait id body>"
  KEYS[6] done       {p}:id  lex zset "<index key><wait id body>"
  KEYS[7] deadlines  {p}:dl  zset waitId by deadline
  KEYS[8] inbox      {p}:ib  lex zset "<mk><padded id><eventKey>"
  KEYS[9] outbox     {p}:o   stream of resolutions

  ARGV[1] keepMs       as appendEvents
  ARGV[2] now          as appendEvents (and the match's time)
  ARGV[3] events       as appendEvents
  ARGV[4] fanoutCap    as matchEvent
  ARGV[5] retentionMs  as matchEvent
  ARGV[6] idPrefix     as matchEvent
  ARGV[7] matchers     "<group> <consumer>": the stream's matchers group and the consumer
                       of this process's matcher (the one read into where a read is needed)
  ARGV[8] handoff      "" or "<group> <consumer>": as matchEvent's, once for the call
  ARGV[9] matchUpTo    the most events a call matches: one with more only appends (a script
                       holds Redis while it runs; the matcher's are one event each)
  ARGV[10..] traces    as appendEvents' ARGV[4..]; each event's context also goes on the
                       outbox entries of the waits it resolves (matchEvent's trace)

  Returns
    { streamId, codes, records }                       appended only (as appendEvents)
    { streamId, codes, records, matches, handed? }     appended and matched: matches has one
                 { status, matchedWaitIds, lateWaitIds, collectedWaitIds } per appended
                 event, in order (status as matchEvent's); handed as matchEvent's
]]
--@include "accept-events"

--@keys
return acceptRows(keys, ARGV, unpackRows(ARGV[3], 2), ARGV[10])
