--[[
  appendEvents: second step of ingest, for the events of a batch whose MATCH KEY
  (tenant, type, correlationId) lies in this partition. Appends the events it has
  not appended before as ONE stream entry (field `ks`: their encoded event keys one
  after the other; they are self-delimiting), so they share one stream id, the
  accepted time. An event key that already has an event record here returns that
  record instead, so a retry (after a crash or not) never appends twice. One HMGET,
  one XADD, one HSET and two ZADDs serve the whole call.

  KEYS[1] stream    {p}:s   stream; entry field ks = <eventKey><eventKey>...
  KEYS[2] events    {p}:e   hash; field "e:<eventKey>" holds the event record
  KEYS[3] inflight  {p}:if  lex zset "<mk><padded id><eventKey>": appended, not yet matched
  KEYS[4] expiry    {p}:x   zset; one member per call for the records it wrote,
                            "E:" .. eventKey1 .. eventKey2 ..., scored by their expiry time

  ARGV[1] keepMs     how long the event records are kept (the dedup window)
  ARGV[2] now        "" = Redis TIME and auto stream ids; tests may fix the time,
                     which then becomes the entry id's milliseconds
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

-- the event keys to append now (a key repeated in the call is appended once)
local fresh, seen = {}, {}
for n = 1, #fields do
  local eventKey = ARGV[3 * n]
  if not stored[n] and not seen[eventKey] then
    seen[eventKey] = true
    fresh[#fresh + 1] = eventKey
  end
end
if #fresh == 0 then
  local replies = {}
  for n = 1, #fields do
    replies[#replies + 1] = C_EXISTS
    replies[#replies + 1] = stored[n]
  end
  return replies
end

local sid = redis.call("XADD", streamKey, idArg, "ks", table.concat(fresh))
local ms = string.match(sid, "^(%d+)")
local suffix = ',"sid":"' .. sid .. '","at":' .. ms .. ',"st":"p"}'
local pad = padId(sid)

local replies, records, inflight, writtenNow = {}, {}, {}, {}
for n = 1, #fields do
  local i = 3 * n
  local eventKey, mk, head = ARGV[i], ARGV[i + 1], ARGV[i + 2]
  local existing = stored[n] or writtenNow[eventKey]
  if existing then
    replies[#replies + 1] = C_EXISTS
    replies[#replies + 1] = existing
  else
    local record = head .. suffix
    writtenNow[eventKey] = record
    records[#records + 1] = fields[n]
    records[#records + 1] = record
    inflight[#inflight + 1] = 0
    inflight[#inflight + 1] = mk .. pad .. eventKey
    replies[#replies + 1] = C_CREATED
    replies[#replies + 1] = sid
  end
end
redis.call("HSET", eventsKey, unpack(records))
redis.call("ZADD", inflightKey, unpack(inflight))
redis.call("ZADD", expiryKey, tonumber(ms) + keepMs, "E:" .. table.concat(fresh))
return replies
