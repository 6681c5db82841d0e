--[[
  appendEvents: second step of ingest, for the events of a batch whose MATCH KEY
  (tenant, type, correlationId) lies in this partition. Appends each event to the
  partition stream once: an event key that already has an event record here
  returns that record's entry instead of appending again, so a retry after a
  crash never appends twice.

  KEYS[1] stream    {p}:s   stream; entry fields k=<eventKey>
  KEYS[2] events    {p}:e   hash; field "e:<eventKey>" holds the event record
  KEYS[3] inflight  {p}:if  lex zset "<mk><padded id><eventKey>": appended, not yet matched
  KEYS[4] expiry    {p}:x   zset; member "e:<eventKey>" scored by its expiry time

  ARGV[1] keepMs     how long the event records are kept (the dedup window)
  ARGV[2] now        "" = Redis TIME and auto stream ids; tests may fix the time,
                     which then becomes the entry ids' milliseconds
  ARGV[3..] pairs    eventKey, record JSON {t, pr, id, ty, c, mk, oa?, pl?, rt}:
                     tenant, producer, id, type, correlation id, encoded match key,
                     occurredAt, raw payload JSON, buffer retention (ms)

  Returns one reply per event, in order:
    { CREATED, streamId }   appended now
    { EXISTS, streamId }    appended before (idempotent retry)
]]
--@include "common"

local streamKey, eventsKey, inflightKey, expiryKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local keepMs, nowArg = tonumber(ARGV[1]), ARGV[2]
local idArg = "*"
if nowArg ~= "" then
  idArg = nowArg .. "-*"
end

local replies = {}
for i = 3, #ARGV, 2 do
  local eventKey, recordJson = ARGV[i], ARGV[i + 1]
  local field = "e:" .. eventKey
  local existing = redis.call("HGET", eventsKey, field)
  if existing then
    replies[#replies + 1] = { C_EXISTS, cjson.decode(existing)["sid"] }
  else
    local sid = redis.call("XADD", streamKey, idArg, "k", eventKey)
    local at = idMs(sid)
    local rec = cjson.decode(recordJson)
    rec["sid"] = sid
    rec["at"] = at
    rec["st"] = "p"
    saveJson(eventsKey, field, rec)
    redis.call("ZADD", inflightKey, 0, rec["mk"] .. padId(sid) .. eventKey)
    redis.call("ZADD", expiryKey, at + keepMs, field)
    replies[#replies + 1] = { C_CREATED, sid }
  end
end
return replies
