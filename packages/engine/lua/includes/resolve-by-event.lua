--[[
  An event resolves a wait: matchEvent (a new event, the waits of its match key) and
  registerWait (a new wait, a buffered event of its match key) both do it this way.
]]
--@include "settle"

-- Resolves the waiting wait by the event `ev` (`ref`: its eventRef): the resolution
-- carries the event with its payload, the history entry its reference. Returns the
-- settled record text. `member`, `trace`: as settleWait.
local function resolveByEvent(keys, waitId, wait, ev, ref, now, retentionMs, member, trace)
  local resolution = { k = "e", at = now, ev = { pr = ev["pr"], id = ev["id"], at = ev["at"], sid = ev["sid"], pl = ev["pl"] } }
  return settleWait(keys, waitId, wait, "r", resolution, { at = now, w = "resolved", k = "e", ev = ref }, now, retentionMs, member, trace)
end

-- Was the settled wait resolved by this very event? (One stream entry may carry
-- several events: this compares the event, not the entry.)
local function resolvedBy(wait, ev)
  local by = wait["res"] and wait["res"]["ev"]
  return by and by["pr"] == ev["pr"] and by["id"] == ev["id"]
end
