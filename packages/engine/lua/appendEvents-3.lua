--[[
  appendEvents: second step of ingest, for the events of a batch whose MATCH KEY
  (tenant, type, correlationId) lies in this partition. Appends the events it has
  not appended before as ONE stream entry (field `ks`: their encoded event keys one
  after the other; they are self-delimiting), so they share one stream id, the
  accepted time. An event key that already has an event record here returns that
  record instead, so a retry (after a crash or not) never appends twice. One HMGET,
  one XADD, one HSET and one ZADD serve the whole call. The stream and its consumer
  group say which events are unprocessed (timeoutWait reads them), so no other index
  is written.

  KEYS[1] stream    {p}:s   stream; entry field ks = <eventKey><eventKey>...
  KEYS[2] events    {p}:e   hash; field "e:<eventKey>" holds the event record
  KEYS[3] expiry    {p}:x   zset; one member per call for the records it wrote,
                            "E:" .. eventKey1 .. eventKey2 ..., scored by their expiry time

  ARGV[1] keepMs     how long the event records are kept (the dedup window)
  ARGV[2] now        "" = Redis TIME and auto stream ids; tests may fix the time,
                     which then becomes the entry id's milliseconds
  ARGV[3] events     per event, one after the other, two fields (nextField): its
                     encoded event key and its record head: the event record JSON
                     {pr, id, mk, ik, oa?, pl?, rt} without its closing brace (producer,
                     id, encoded match key: tenant, type and correlation id; its
                     index key; occurredAt,
                     canonical payload JSON, buffer retention in ms); this script
                     completes it with sid, at and st, so it does no JSON work. One
                     argument: cheaper to send.
  ARGV[4..] traces   absent when no event has a trace context (nothing more sent);
                     else one argument, a packed field (nextField) per event of ARGV[3],
                     in order: its trace context text, "" for none. Written as the
                     entry's field t (stream-entries).

  Returns { streamId ("" when nothing was appended), codes, records }
    codes     one digit per event, in order: CREATED (appended now, at streamId) or
              EXISTS (appended before)
    records   the stored event record (JSON) of each EXISTS event, in order
]]
--@include "append-events"

--@keys
local sid, codes, existing = appendEventRows(keys, tonumber(ARGV[1]), ARGV[2], unpackRows(ARGV[3], 2), ARGV[4])
return { sid, codes, existing }
