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

-- A shaped waiting wait (any-of, count, failure types) takes the event `ev` of its match
-- key number `x` (`ref`: its eventRef). The event joins the collected events in accepted
-- order; with N of them, or for an event of a failure type, the wait is resolved (the
-- resolution lists them, `o` = "f" marks a failure type's),
-- else it stays waiting with them collected. An event collected before is not taken
-- again (distinct event keys). Returns (taken, settled record text or nil). `member`,
-- `trace`: as settleWait.
local function takeForShape(keys, waitId, wait, ev, ref, x, now, retentionMs, member, trace)
  local col = wait["col"] or {}
  for _, r in ipairs(col) do
    if r["pr"] == ev["pr"] and r["id"] == ev["id"] then
      return false, nil
    end
  end
  local taken = { pr = ev["pr"], id = ev["id"], at = ev["at"], sid = ev["sid"], pl = ev["pl"], x = x }
  -- into accepted order (stream id: accepted ms, then sequence); almost always last
  local i = #col + 1
  local sid = taken["sid"]
  while i > 1 do
    local prev = col[i - 1]
    local psid = prev["sid"]
    if prev["at"] < taken["at"] or (prev["at"] == taken["at"] and (#psid < #sid or (#psid == #sid and psid <= sid))) then
      break
    end
    col[i] = prev
    i = i - 1
  end
  col[i] = taken
  local failure = false
  for _, k in ipairs(wait["fk"] or {}) do
    if k == ev["mk"] then
      failure = true
    end
  end
  if failure or #col >= (wait["n"] or 1) then
    wait["col"] = nil
    local resolution = { k = "e", at = now, ev = taken, evs = col }
    local entry = { at = now, w = "resolved", k = "e", ev = ref }
    if failure then
      -- (the outcome's mark, as for the other kinds: "f", absent for success)
      resolution["o"] = "f"
      entry["o"] = "f"
    end
    local record = settleWait(keys, waitId, wait, "r", resolution, entry, now, retentionMs, member, trace)
    return true, record
  end
  wait["col"] = col
  pushHistory(wait, { at = now, w = "collected", ev = ref })
  saveWait(keys.waits, waitId, wait)
  return true, nil
end
