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
--@include "codes"
--@include "packed"
--@include "clock"
--@include "event-record"
--@include "stream-entries"
--@include "expiry"

--@keys
local keepMs, nowArg = tonumber(ARGV[1]), ARGV[2]
local idArg = "*"
if nowArg ~= "" then
  idArg = nowArg .. "-*"
end

local eventKeys, heads, fields, stored = loadEventRows(keys.events, ARGV[3])

-- the event keys to append now (a key repeated in the call is appended once), and
-- their trace context parts when the call has any
local traces = ARGV[4] and unpackRows(ARGV[4], 1)[1] or nil
local fresh, seen, traceParts = {}, {}, nil
if traces then
  traceParts = {}
end
for n = 1, #fields do
  local eventKey = eventKeys[n]
  if not stored[n] and not seen[eventKey] then
    seen[eventKey] = true
    fresh[#fresh + 1] = eventKey
    if traces then
      local t = traces[n] or ""
      traceParts[#traceParts + 1] = #t .. ":" .. t
    end
  end
end
if #fresh == 0 then
  local codes = {}
  for n = 1, #fields do
    codes[n] = D_EXISTS
  end
  return { "", table.concat(codes), stored }
end

local sid = addEntry(keys.stream, idArg, fresh, traceParts)
local ms = string.match(sid, "^(%d+)")
local suffix = pendingTail(sid, ms)

local codes, existingRecords, records, writtenNow = {}, {}, {}, {}
for n = 1, #fields do
  local eventKey = eventKeys[n]
  local existing = stored[n] or writtenNow[eventKey]
  if existing then
    codes[n] = D_EXISTS
    existingRecords[#existingRecords + 1] = existing
  else
    local record = heads[n] .. suffix
    writtenNow[eventKey] = record
    records[#records + 1] = fields[n]
    records[#records + 1] = record
    codes[n] = D_CREATED
  end
end
redis.call("HSET", keys.events, unpack(records))
scheduleExpiry(keys.expiry, intText(tonumber(ms) + keepMs), "E", table.concat(fresh))
return { sid, table.concat(codes), existingRecords }
