--[[
  The events hash of a partition holds two records per event key: its event record
  in field "e:<eventKey>" and its dedup record in field "d:<eventKey>".
  Event records are JSON {pr, id, mk, ik?, oa?, pl?, rt, sid, at, st, ...} (ik: the
  index key of mk, computed at ingest; older records lack it); states: p pending
  (appended, not matched yet), m matched, b buffered, l late (and buffered), x expired.
  Dedup records are "<content hash>|<match partition>"; a dedup record may also be
  JSON {h = content hash, mp = match partition}, read as the same text.
]]
--@include "hash-records"
--@include "packed"

--@inline
local function loadEvent(eventsKey, eventKey)
  return loadJson(eventsKey, "e:" .. eventKey)
end

--@inline
local function saveEvent(eventsKey, eventKey, ev)
  saveJson(eventsKey, "e:" .. eventKey, ev)
end

--@inline
local function deleteEvent(eventsKey, eventKey)
  redis.call("HDEL", eventsKey, "e:" .. eventKey)
end

-- The stored event records (false: none) of a list of event keys, with one HMGET.
local function loadEventRecords(eventsKey, eventKeys)
  local fields = {}
  for n = 1, #eventKeys do
    fields[n] = "e:" .. eventKeys[n]
  end
  return redis.call("HMGET", eventsKey, unpack(fields))
end

-- Rows (encoded event key, value; unpackRows of appendEvents' ARGV[3]) with their
-- event-record fields and stored records: loadRows.
local function loadEventRows(eventsKey, rows)
  return loadRows(eventsKey, rows, "e:")
end

-- What completes an appended event's record head (its JSON without the closing
-- brace) into a pending event record accepted as stream entry `sid` at `ms`.
local function pendingTail(sid, ms)
  return ',"sid":"' .. sid .. '","at":' .. ms .. ',"st":"p"}'
end

-- The decoded event record of a stored record text when the event is pending, else
-- nil. A pending record has the text pendingTail ends, so the find spares decoding
-- the others; the decoded record decides.
local function pendingEvent(raw)
  if raw and string.find(raw, '"st":"p"', 1, true) then
    local ev = cjson.decode(raw)
    if ev["st"] == "p" then
      return ev
    end
  end
  return nil
end

-- Is the event buffered (in the inbox, for a later wait of its match key)?
--@inline
local function isBuffered(ev)
  return ev["st"] == "b" or ev["st"] == "l"
end

-- What a wait's timeline and late list record of an event.
--@inline
local function eventRef(ev)
  return { pr = ev["pr"], id = ev["id"], at = ev["at"], sid = ev["sid"] }
end

-- Packed rows (encoded event key, dedup record) with their dedup-record fields and
-- stored records: loadPackedRows.
local function loadDedupRows(eventsKey, packed)
  return loadPackedRows(eventsKey, packed, "d:")
end

--@inline
local function deleteDedup(eventsKey, eventKey)
  redis.call("HDEL", eventsKey, "d:" .. eventKey)
end

-- A stored dedup record as its "<content hash>|<match partition>" text.
local function dedupText(stored)
  if string.byte(stored, 1) == 123 then
    local old = cjson.decode(stored)
    return old["h"] .. "|" .. old["mp"]
  end
  return stored
end
