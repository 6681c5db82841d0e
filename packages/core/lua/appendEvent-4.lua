--[[
  appendEvent: second step of ingest, in the partition of the MATCH KEY
  (tenant, type, correlationId). Appends the event to the partition stream once:
  an event key that already has an event record here returns that record's entry
  instead of appending again, so a retry after a crash never appends twice.

  KEYS[1] stream    {p}:s   stream; entry fields k=<eventKey>
  KEYS[2] events    {p}:e   hash; field "e:<eventKey>" holds the event record
  KEYS[3] inflight  {p}:if  lex zset "<mk><padded id><eventKey>": appended, not yet matched
  KEYS[4] expiry    {p}:x   zset; member "e:<eventKey>" scored by its expiry time

  ARGV[1] eventKey
  ARGV[2] record     JSON {t, pr, id, ty, c, mk, oa?, pl?, rt}: tenant, producer, id,
                     type, correlation id, encoded match key, occurredAt, raw payload
                     JSON, buffer retention (ms)
  ARGV[3] keepMs     how long the event record is kept (the dedup window)
  ARGV[4] now        "" = Redis TIME and an auto stream id; tests may fix the time,
                     which then becomes the entry id's milliseconds

  Returns
    { CREATED, streamId }   appended now
    { EXISTS, streamId }    appended before (idempotent retry)
]]
--@include "common"

local streamKey, eventsKey, inflightKey, expiryKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local eventKey, recordJson, keepMs, nowArg = ARGV[1], ARGV[2], tonumber(ARGV[3]), ARGV[4]

local field = "e:" .. eventKey
local existing = loadJson(eventsKey, field)
if existing then
  return { C_EXISTS, existing["sid"] }
end

local idArg = "*"
if nowArg ~= "" then
  idArg = nowArg .. "-*"
end
local sid = redis.call("XADD", streamKey, idArg, "k", eventKey)
local at = idMs(sid)

local rec = cjson.decode(recordJson)
rec["sid"] = sid
rec["at"] = at
rec["st"] = "p"
saveJson(eventsKey, field, rec)
redis.call("ZADD", inflightKey, 0, rec["mk"] .. padId(sid) .. eventKey)
redis.call("ZADD", expiryKey, at + keepMs, field)
return { C_CREATED, sid }
