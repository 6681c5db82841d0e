--[[
  The API view of a wait (docs/api.md, the Wait) as JSON text, for the continuation jobs
  the accept adds itself (continuation-jobs.lua): the view src/formats/wait-record.ts
  `toWait` gives, for the waits an event resolves in the accept, plain ones (not any-of,
  count or failure types). A test renders records both ways and compares them
  (packages/workers/test/accept-dispatch.test.ts). Metadata and payloads are kept as the
  raw JSON the API took: embedded as they are, never decoded and encoded again (cjson
  would turn [] into {} and round numbers to 14 digits).
]]
--@include "clock"
--@include "parts"

-- The times written in this call and their texts, and the last day and its date part: the
-- views of a call share their resolution's time and their event's (one stream entry a
-- partition), each written twice a view, and a day.
local isoTexts, lastDay, lastDayText = {}, nil, nil

-- An epoch time in ms as ISO-8601 UTC with milliseconds, as Date.prototype.toISOString
-- writes it (years 0 to 9999). Days to a civil date by H. Hinnant's days_from_civil
-- inverse; divisions by arithmetic (math.floor is a C call: ~1,000 Redis instructions).
local function isoText(ms)
  local known = isoTexts[ms]
  if known then
    return known
  end
  local rest = ms % 86400000
  local days = (ms - rest) / 86400000
  if days ~= lastDay then
    local z = days + 719468
    local doe = z % 146097
    local era = (z - doe) / 146097
    local a = doe - (doe - doe % 1460) / 1460 + (doe - doe % 36524) / 36524 - (doe - doe % 146096) / 146096
    local yoe = (a - a % 365) / 365
    local doy = doe - (365 * yoe + (yoe - yoe % 4) / 4 - (yoe - yoe % 100) / 100)
    local b = 5 * doy + 2
    local mp = (b - b % 153) / 153
    local c = 153 * mp + 2
    local month = mp < 10 and mp + 3 or mp - 9
    lastDayText = string.format("%04d-%02d-%02dT", yoe + era * 400 + (month <= 2 and 1 or 0), month, doy - (c - c % 5) / 5 + 1)
    lastDay = days
  end
  local ms1 = rest % 1000
  local s = (rest - ms1) / 1000
  local sec = s % 60
  local m = (s - sec) / 60
  local min = m % 60
  local text = string.format("%s%02d:%02d:%02d.%03dZ", lastDayText, (m - min) / 60, min, sec, ms1)
  isoTexts[ms] = text
  return text
end

-- The encoded match key's three parts (tenant, type, correlation id).
local function matchKeyParts(mk)
  local s1, e1, s2, e2, s3, e3 = threeParts(mk)
  return string.sub(mk, s1, e1), string.sub(mk, s2, e2), string.sub(mk, s3, e3)
end

-- Strings the product makes or refuses unless they are of letters, digits, ".", "_" and "-"
-- (docs/api.md: tenant and producer names, event types; wait ids, stream ids, the history's
-- and the resolutions' words) are written between quotes as they are: no escape can be
-- needed, and cjson.encode would make a string of each (a C call, its bytes hashed). Any
-- other string (a run id, a position, a correlation or event id) is cjson's.

-- A JSON value of the view: a string, an integer, a boolean; nil for anything else
-- (a table, a fraction: the view is then left to the dispatcher).
local function scalarJson(v)
  local t = type(v)
  if t == "string" then
    return cjson.encode(v)
  elseif t == "number" and v % 1 == 0 and v > -9007199254740992 and v < 9007199254740992 then
    return intText(v)
  elseif t == "boolean" then
    return v and "true" or "false"
  end
  return nil
end

-- Every string a script makes is hashed byte by byte as Redis's Lua interns it, so the view
-- is written as one concatenation where it can be: a part joined into a string of its own
-- and then into the view would have its bytes hashed twice. (A table of pieces joined once
-- costs more in table work than it spares.)

-- Raw JSON text kept by the API (metadata, a payload), or null.
local function rawJson(raw)
  if raw == nil or raw == "" then
    return "null"
  end
  return raw
end

-- A history entry as the view's HistoryEntry after a comma (what follows the registration's
-- entry in the view's history: no string of the entry alone is made), or nil when one of its
-- fields is not a scalar the view writes as is: its time and what, its event, deadline,
-- external job id and kind where it has them, then any other field as it is.
local function historyJson(h)
  local ev, dl, j, k = h["ev"], h["dl"], h["j"], h["k"]
  if (ev ~= nil and type(ev) ~= "table") or type(h["w"]) ~= "string" then
    return nil
  end
  local rest = ""
  for f, v in pairs(h) do
    if f ~= "at" and f ~= "w" and f ~= "o" and f ~= "ev" and f ~= "dl" and f ~= "j" and f ~= "k" then
      local text = scalarJson(v)
      if text == nil then
        return nil
      end
      rest = rest .. "," .. cjson.encode(f) .. ":" .. text
    end
  end
  if type(dl) ~= "number" then
    dl = nil
  end
  if type(j) ~= "string" then
    j = nil
  end
  if type(k) ~= "string" then
    k = nil
  end
  local outcome = ""
  if h["w"] == "resolved" and (k == "e" or k == "d" or k == "k") then
    outcome = h["o"] == "f" and ',"outcome":"failure"' or ',"outcome":"success"'
  end
  return ',{"at":"' .. isoText(h["at"]) .. '","what":"' .. h["w"] .. '"'
    .. (ev and ',"event":{"producer":"' or "") .. (ev and ev["pr"] or "")
    .. (ev and '","id":' or "") .. (ev and cjson.encode(ev["id"]) or "")
    .. (ev and ',"acceptedAt":"' or "") .. (ev and isoText(ev["at"]) or "")
    .. (ev and '","streamId":"' or "") .. (ev and ev["sid"] or "") .. (ev and '"}' or "")
    .. (dl and ',"deadline":"' or "") .. (dl and isoText(dl) or "") .. (dl and '"' or "")
    .. (j and ',"externalJobId":' or "") .. (j and cjson.encode(j) or "")
    .. (k and ',"kind":"' or "") .. (k and (k == "e" and "event" or k == "t" and "timeout"
      or k == "c" and "cancel" or k == "d" and "deliver" or k == "k" and "token" or k) or "") .. (k and '"' or "")
    .. rest .. outcome .. "}"
end

-- An event reference ({pr, id, at, sid}) as the view's EventRef (a late event). The same
-- fields are written inline in a history entry's event and in the resolution's (the two every
-- view has), not through this: a change to the EventRef changes all three.
local function eventRefJson(ev)
  return '{"producer":"' .. ev["pr"] .. '","id":' .. cjson.encode(ev["id"])
    .. ',"acceptedAt":"' .. isoText(ev["at"]) .. '","streamId":"' .. ev["sid"] .. '"}'
end

-- The view of wait `waitId`, a plain wait resolved by an event (decoded record `wait`),
-- as JSON text; nil for any other (its continuation then goes the dispatcher's way).
local function waitViewJson(waitId, wait)
  local res = wait["res"]
  if wait["s"] ~= "r" or res == nil or res["k"] ~= "e" or res["ev"] == nil or res["o"] ~= nil
     or wait["mx"] ~= nil or wait["n"] ~= nil or wait["fk"] ~= nil or wait["col"] ~= nil or wait["con"] ~= nil then
    return nil
  end
  local tenant, eventType, correlationId = matchKeyParts(wait["mk"])
  -- the stored history after the registration's entry (mostly one or two entries)
  local history = ""
  for _, h in ipairs(wait["h"] or {}) do
    local text = historyJson(h)
    if text == nil then
      return nil
    end
    if history == "" then
      history = text
    else
      history = history .. text
    end
  end
  local late = ""
  for i, ev in ipairs(wait["late"] or {}) do
    late = late .. (i > 1 and "," or "") .. eventRefJson(ev)
  end
  local createdAt = isoText(wait["ca"])
  local dl, sn, d0, hb, hbl, ti = wait["dl"], wait["sn"], wait["d0"], wait["hb"], wait["hbl"], wait["ti"]
  local deadline = dl and isoText(dl)
  local since = sn and isoText(sn)
  -- (the registration's deadline: the first one, where a heartbeat moved it since)
  local registeredDeadline = d0 and isoText(d0) or deadline
  local ev, resDl = res["ev"], res["dl"]
  return '{"id":"' .. waitId .. '","tenant":"' .. tenant
    .. '","runId":' .. cjson.encode(wait["r"]) .. ',"position":' .. cjson.encode(wait["p"])
    .. ',"eventType":"' .. eventType .. '","correlationId":' .. cjson.encode(correlationId)
    .. ',"state":"resolved","createdAt":"' .. createdAt
    .. (deadline and '","deadline":"' or '","deadline":null') .. (deadline or "") .. (deadline and '"' or "")
    .. (since and ',"since":"' or ',"since":null') .. (since or "") .. (since and '"' or "")
    .. ',"externalJobId":' .. (wait["j"] and cjson.encode(wait["j"]) or "null")
    .. ',"metadata":' .. rawJson(wait["m"])
    .. ',"resolution":{"kind":"event","at":"' .. isoText(res["at"])
    .. '","event":{"producer":"' .. ev["pr"] .. '","id":' .. cjson.encode(ev["id"])
    .. ',"acceptedAt":"' .. isoText(ev["at"]) .. '","streamId":"' .. ev["sid"]
    .. '","payload":' .. rawJson(ev["pl"]) .. '},"outcome":"success"'
    .. (resDl and ',"deadline":"' or "") .. (resDl and isoText(resDl) or "") .. (resDl and '"' or "")
    .. '},"consumption":null,"lateEvents":[' .. late
    .. '],"history":[{"at":"' .. createdAt .. '","what":"registered"'
    .. (registeredDeadline and ',"deadline":"' or "") .. (registeredDeadline or "") .. (registeredDeadline and '"' or "")
    .. (since and ',"since":"' or "") .. (since or "") .. (since and '"' or "")
    .. "}" .. history .. '],"token":' .. (ti and '{"issuedAt":"' or "null") .. (ti and isoText(ti) or "")
    .. (ti and '"}' or "") .. ',"heartbeat":' .. (hb and '{"intervalMs":' or "null") .. (hb and intText(hb) or "")
    .. (hb and ',"count":' or "") .. (hb and intText(wait["hbn"] or 0) or "")
    .. (hb and ',"lastAt":' or "") .. (hb and (hbl and '"' or "null") or "") .. (hb and hbl and isoText(hbl) or "")
    .. (hb and hbl and '"' or "") .. (hb and "}" or "") .. "}"
end
