--[[
  The append of ingest's second step (appendEvents; acceptEvents, which matches what it
  appended in the same step): the events a call has not appended before become ONE
  stream entry (field ks, their encoded event keys; t, their trace contexts when any
  has one), and their event records are written, completed with the entry's id, time
  and status. An event key that has an event record already answers that record.
]]
--@include "codes"
--@include "packed"
--@include "clock"
--@include "event-record"
--@include "stream-entries"
--@include "expiry"

-- Appends the events `rows` (appendEvents' ARGV[3] unpacked: unpackRows(ARGV[3], 2);
-- `tracesArg`: its ARGV[4] or nil) to the partition's stream, keeping their records `keepMs`; `nowArg`
-- "" or a fixed time. Returns sid ("" when nothing was appended), the code digits, the
-- records of the EXISTS events, the event keys appended (in order), when the call has
-- traces their trace context texts (same order), and the records written now by event
-- key (what a match in the same script reads instead of the hash).
local function appendEventRows(keys, keepMs, nowArg, rows, tracesArg)
  local idArg = "*"
  if nowArg ~= "" then
    idArg = nowArg .. "-*"
  end

  local eventKeys, heads, fields, stored = loadEventRows(keys.events, rows)

  -- the event keys to append now (a key repeated in the call is appended once), and
  -- their trace context parts when the call has any
  local traces = tracesArg and unpackRows(tracesArg, 1)[1] or nil
  local fresh, seen, traceParts, freshTraces = {}, {}, nil, nil
  if traces then
    traceParts, freshTraces = {}, {}
  end
  for n = 1, #fields do
    local eventKey = eventKeys[n]
    if not stored[n] and not seen[eventKey] then
      seen[eventKey] = true
      fresh[#fresh + 1] = eventKey
      if traces then
        local t = traces[n] or ""
        traceParts[#traceParts + 1] = #t .. ":" .. t
        freshTraces[#fresh] = t
      end
    end
  end
  if #fresh == 0 then
    local codes = {}
    for n = 1, #fields do
      codes[n] = D_EXISTS
    end
    return "", table.concat(codes), stored, fresh
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
  return sid, table.concat(codes), existingRecords, fresh, freshTraces, writtenNow
end
