--[[
  appendEvents: second step of ingest, for the events of a batch whose MATCH KEY
  (tenant, type, correlationId) lies in this partition. Appends each event to the
  partition stream once: an event key that already has an event record here
  returns that record instead of appending again, so a retry (after a crash or
  not) never appends twice. Besides one XADD per event, one HMGET, one HSET and two
  ZADDs serve the whole call.

  KEYS[1] stream    {p}:s   stream; entry fields k=<eventKey>
  KEYS[2] events    {p}:e   hash; field "e:<eventKey>" holds the event record
  KEYS[3] inflight  {p}:if  lex zset "<mk><padded id><eventKey>": appended, not yet matched
  KEYS[4] expiry    {p}:x   zset; one member per call for the records it wrote,
                            "E:" .. eventKey1 .. eventKey2 ... (encoded event keys are
                            self-delimiting), scored by their expiry time

  ARGV[1] keepMs     how long the event records are kept (the dedup window)
  ARGV[2] now        "" = Redis TIME and auto stream ids; tests may fix the time,
                     which then becomes the entry ids' milliseconds
  ARGV[3..] triples  eventKey, encoded match key, record head: the event record
                     JSON {t, pr, id, ty, c, mk, oa?, pl?, rt} without its closing
                     brace (tenant, producer, id, type, correlation id, encoded match
                     key, occurredAt, raw payload JSON, buffer retention in ms); this
                     script completes it with sid, at and st, so it does no JSON work

  Returns two values per event, in order (a flat list):
    CREATED, streamId       appended now
    EXISTS, record          appended before: the stored event record (JSON)
]]
--@include "common"

local streamKey, eventsKey, inflightKey, expiryKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local keepMs, nowArg = tonumber(ARGV[1]), ARGV[2]
local idArg = "*"
if nowArg ~= "" then
  idArg = nowArg .. "-*"
end

local fields = {}
for i = 3, #ARGV, 3 do
  fields[#fields + 1] = "e:" .. ARGV[i]
end
local stored = redis.call("HMGET", eventsKey, unpack(fields))

local replies, records, inflight, written, writtenNow = {}, {}, {}, {}, {}
local lastMs = 0
for n = 1, #fields do
  local i = 3 * n
  local eventKey, mk, head = ARGV[i], ARGV[i + 1], ARGV[i + 2]
  local existing = stored[n] or writtenNow[eventKey]
  if existing then
    replies[#replies + 1] = C_EXISTS
    replies[#replies + 1] = existing
  else
    local sid = redis.call("XADD", streamKey, idArg, "k", eventKey)
    local ms = string.match(sid, "^(%d+)")
    local record = head .. ',"sid":"' .. sid .. '","at":' .. ms .. ',"st":"p"}'
    writtenNow[eventKey] = record
    records[#records + 1] = fields[n]
    records[#records + 1] = record
    inflight[#inflight + 1] = 0
    inflight[#inflight + 1] = mk .. padId(sid) .. eventKey
    written[#written + 1] = eventKey
    lastMs = tonumber(ms)
    replies[#replies + 1] = C_CREATED
    replies[#replies + 1] = sid
  end
end
if #written > 0 then
  redis.call("HSET", eventsKey, unpack(records))
  redis.call("ZADD", inflightKey, unpack(inflight))
  redis.call("ZADD", expiryKey, lastMs + keepMs, "E:" .. table.concat(written))
end
return replies
