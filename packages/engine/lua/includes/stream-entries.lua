--[[
  The entries of a partition stream. An entry is written with field ks: the encoded
  event keys of the events accepted together, one after the other (self-delimiting).
  An entry with field k (one event key) is read the same way. An entry whose events
  came with trace contexts also has field t: one length-prefixed part ("<len>:<text>")
  per event of ks, in order, the event's trace context text ("" for none; see
  src/formats/trace-context.ts).
]]
--@include "parts"

-- Appends one entry for the events with these event keys (and, when not nil, their
-- trace context parts, one per event key); returns its stream id.
local function addEntry(streamKey, id, eventKeys, traceParts)
  if traceParts then
    return redis.call("XADD", streamKey, id, "ks", table.concat(eventKeys), "t", table.concat(traceParts))
  end
  return redis.call("XADD", streamKey, id, "ks", table.concat(eventKeys))
end

-- Appends to `into` the event keys of a stream entry (as XRANGE replies it); returns `into`.
local function entryEventKeys(entry, into)
  local fields = entry[2]
  for f = 1, #fields, 2 do
    if fields[f] == "ks" then
      splitEventKeys(fields[f + 1], into)
    elseif fields[f] == "k" then
      into[#into + 1] = fields[f + 1]
    end
  end
  return into
end
