--[[
  The match of one event of a stream entry (matchEvent: the matcher's, one event per
  call; acceptEvents: every event a call appended, in the same step). What it does
  is matchEvent's header: resolve the waiting waits of the match key it may resolve
  (up to the fan-out cap), note it late where it is late, buffer it when it resolved
  none. Re-running it for an entry already processed changes nothing.
]]
--@include "codes"
--@include "wait-record"
--@include "wait-index"
--@include "event-record"
--@include "inbox"
--@include "expiry"
--@include "resolve-by-event"

-- Matches the event `eventKey` of stream entry `streamId` (capText: the fan-out cap as
-- text; trace: "" or the context text for the resolutions' outbox entries; raw: its
-- record text when the caller wrote it in this script, else nil: read). Returns
--   { code = C_NOT_FOUND }                    no event record (expired)
--   { code = C_DUPLICATE, sid = <other id> }  the event key belongs to another entry
--   { code = C_OK, st, matched, late, collected?, registrations?, again? }
--     st: m / b / l; collected: the matched waits that only collected it (nil for none);
--     registrations (with a trace): each matched wait's registration context;
--     again: processed before, this answers what the first run did
local function matchEntryEvent(keys, streamId, eventKey, capText, retentionMs, now, idPrefix, trace, raw)
  local fanoutCap = capText + 0
  local ev = raw and cjson.decode(raw) or loadEvent(keys.events, eventKey)
  if ev == nil then
    return { code = C_NOT_FOUND }
  end
  if ev["sid"] ~= streamId then
    return { code = C_DUPLICATE, sid = ev["sid"] }
  end
  if ev["st"] ~= "p" then
    -- processed before: answer what the first run did (a buffered event may since
    -- have been taken by a registration; that is not this run's doing)
    if ev["mo"] == "m" then
      return { code = C_OK, st = "m", matched = ev["mw"] or {}, late = ev["lf"] or {}, collected = ev["mc"] or {}, again = true }
    end
    return { code = C_OK, st = ev["mo"] or ev["st"], matched = {}, late = ev["lf"] or {}, again = true }
  end

  local mk = ev["mk"]
  local at = ev["at"]
  local ref = eventRef(ev)
  local matched, late = {}, {}
  -- (made only when a wait only collects the event: most matches have none)
  local collected = nil
  -- (only with a trace: no table, no reply element otherwise)
  local registrations = trace ~= "" and {} or nil

  local function noteLate(waitId, wait)
    wait["late"] = wait["late"] or {}
    wait["late"][#wait["late"] + 1] = ref
    pushHistory(wait, { at = now, w = "late_event", ev = ref })
    saveWait(keys.waits, waitId, wait)
    late[#late + 1] = waitId
  end

  -- Page through the waiting waits of the match key until `fanoutCap` are resolved:
  -- waits this event may not resolve (since after it, deadline before it) do not use
  -- up the cap. Resolved waits leave the index, so pages continue after the last member.
  -- (the record carries the index key of its match key, `ix`, and the legacy one, `ik`;
  -- records of older versions carry `ik` only, or neither)
  local ik = indexKey(mk, ev["ix"])
  -- The settled waits of the match key (for late events), read before this event settles
  -- any: when they and the waits it resolves fit in one page of fanoutCap, a read after
  -- the resolutions gives this page and the waits resolved now; else it is read again.
  local first, last = "[" .. ik, "(" .. ik .. "\255"
  local settledBefore = redis.call("ZRANGEBYLEX", keys.done, first, last, "LIMIT", "0", capText)

  -- The waits indexed before the layout change are under the legacy index key: given by
  -- the record (`ik`), or computed for a record of an earlier version (no `ix`); a record
  -- with `ix` alone says the indexes hold no legacy member. Pass 1 reads the current
  -- range, pass 2 the legacy one, whose members settleWait replaces (it is handed none).
  local lik = ev["ik"]
  if lik == nil and ev["ix"] == nil then
    lik = indexKey(mk, ik, true)
  end
  local passes = lik == nil and 1 or 2
  for pass = 1, passes do
    local from, to = first, last
    if pass == 2 then
      from, to = "[" .. lik, "(" .. lik .. "\255"
    end
    while #matched < fanoutCap do
      local page = redis.call("ZRANGEBYLEX", keys.waiting, from, to, "LIMIT", "0", capText)
      for _, member in ipairs(page) do
        if #matched >= fanoutCap then
          break
        end
        local waitId = memberWaitId(idPrefix, member)
        local wait = loadWait(keys.waits, waitId)
        -- (an index key may be shared by another match key: the wait's own must be this one)
        -- (an any-of wait is indexed under each of its match keys: x is this one's number)
        local x = wait ~= nil and (wait["mk"] == mk and 1 or matchKeyNumber(wait, mk)) or nil
        if x ~= nil and wait["s"] == "w" and at >= (wait["sn"] or 0) then
          if wait["dl"] ~= nil and at > wait["dl"] then
            noteLate(waitId, wait)
          elseif isShaped(wait) then
            -- collected, or resolving it (N events, a failure type); taken either way
            local taken, record = takeForShape(keys, waitId, wait, ev, ref, x, now, retentionMs, pass == 1 and member or nil, trace)
            if taken then
              matched[#matched + 1] = waitId
              if record == nil then
                -- collected only: still waiting (the count of waiting waits is unchanged)
                collected = collected or {}
                collected[#collected + 1] = waitId
              end
              if registrations then
                registrations[#matched] = wait["tc"] or ""
              end
            end
          else
            -- (the member names this wait: its index key is the wait's, as mk is)
            resolveByEvent(keys, waitId, wait, ev, ref, now, retentionMs, pass == 1 and member or nil, trace)
            matched[#matched + 1] = waitId
            if registrations then
              registrations[#matched] = wait["tc"] or ""
            end
          end
        end
        from = "(" .. member
      end
      if #page < fanoutCap then
        break
      end
    end
  end

  local settledNow = nil
  local members = settledBefore
  if #settledBefore + #matched > fanoutCap then
    settledNow = {}
    for _, waitId in ipairs(matched) do
      settledNow[waitId] = true
    end
    members = redis.call("ZRANGEBYLEX", keys.done, first, last, "LIMIT", "0", capText)
  end
  for pass = 1, passes do
    if pass == 2 then
      -- (a wait settled now is in the done index under the current layout, never the legacy one)
      members = redis.call("ZRANGEBYLEX", keys.done, "[" .. lik, "(" .. lik .. "\255", "LIMIT", "0", capText)
      settledNow = nil
    end
    for _, member in ipairs(members) do
      local waitId = memberWaitId(idPrefix, member)
      -- (a wait this very event just resolved is not late for it: not even loaded)
      local wait = not (settledNow and settledNow[waitId]) and loadWait(keys.waits, waitId) or nil
      -- settled before, not by this very event
      if wait ~= nil and matchKeyNumber(wait, mk) ~= nil and wait["s"] ~= "w" and not resolvedBy(wait, ev)
         and at >= (wait["sn"] or 0) then
        noteLate(waitId, wait)
      end
    end
  end

  if #matched > 0 then
    ev["st"] = "m"
    ev["pl"] = nil
  else
    -- nothing resolved: buffered for a later wait, also when it was late for some
    -- (status `l` then, still in the inbox)
    if #late > 0 then
      ev["st"] = "l"
    else
      ev["st"] = "b"
    end
    redis.call("ZADD", keys.inbox, "0", inboxMember(mk, streamId, eventKey))
    scheduleExpiry(keys.expiry, intText(at + ev["rt"]), "b", eventKey)
  end
  ev["mo"] = ev["st"]
  ev["ix"] = nil -- (only the match reads them)
  ev["ik"] = nil
  if #matched > 0 then ev["mw"] = matched end
  if #late > 0 then ev["lf"] = late end
  ev["mc"] = collected
  saveEvent(keys.events, eventKey, ev)
  return { code = C_OK, st = ev["st"], matched = matched, late = late, collected = collected, registrations = registrations }
end
