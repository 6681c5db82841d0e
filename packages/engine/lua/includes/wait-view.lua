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

-- The last two times written and their texts, the last day and its date part: a view's
-- times are mostly two, its registration's and its resolution's (the resolution's time, its
-- event's, its history entry's), and of one day. (Two pairs of locals: a table would cost
-- more than the texts it spares.)
local isoMs1, isoText1, isoMs2, isoText2, lastDay, lastDayText = nil, nil, nil, nil, nil, nil

-- An epoch time in ms as ISO-8601 UTC with milliseconds, as Date.prototype.toISOString
-- writes it (years 0 to 9999). Days to a civil date by H. Hinnant's days_from_civil
-- inverse; divisions by arithmetic (math.floor is a C call: ~1,000 Redis instructions).
local function isoText(ms)
  if ms == isoMs1 then
    return isoText1
  elseif ms == isoMs2 then
    return isoText2
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
  local text = lastDayText .. string.format("%02d:%02d:%02d.%03dZ", (m - min) / 60, min, sec, ms1)
  isoMs2, isoText2, isoMs1, isoText1 = isoMs1, isoText1, ms, text
  return text
end

-- The encoded match key's three parts (tenant, type, correlation id).
local function matchKeyParts(mk)
  local s1, e1, s2, e2, s3, e3 = threeParts(mk)
  return string.sub(mk, s1, e1), string.sub(mk, s2, e2), string.sub(mk, s3, e3)
end

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

-- An event reference ({pr, id, at, sid}) as the view's EventRef, without its closing brace.
local function eventRefOpen(ev)
  return '{"producer":' .. cjson.encode(ev["pr"]) .. ',"id":' .. cjson.encode(ev["id"])
    .. ',"acceptedAt":"' .. isoText(ev["at"]) .. '","streamId":' .. cjson.encode(ev["sid"])
end

-- Raw JSON text kept by the API (metadata, a payload), or null.
local function rawJson(raw)
  if raw == nil or raw == "" then
    return "null"
  end
  return raw
end

-- A history entry as the view's HistoryEntry, or nil when one of its fields is not a
-- scalar the view writes as is.
local function historyJson(h)
  local parts = { '{"at":"' .. isoText(h["at"]) .. '","what":' .. cjson.encode(h["w"]) }
  local k = h["k"]
  for f, v in pairs(h) do
    if f == "ev" then
      if type(v) ~= "table" then
        return nil
      end
      parts[#parts + 1] = '"event":' .. eventRefOpen(v) .. "}"
    elseif f == "dl" then
      if type(v) == "number" then
        parts[#parts + 1] = '"deadline":"' .. isoText(v) .. '"'
      end
    elseif f == "j" then
      if type(v) == "string" then
        parts[#parts + 1] = '"externalJobId":' .. cjson.encode(v)
      end
    elseif f == "k" then
      if type(v) == "string" then
        local kind = v == "e" and "event" or v == "t" and "timeout" or v == "c" and "cancel"
          or v == "d" and "deliver" or v == "k" and "token" or v
        parts[#parts + 1] = '"kind":' .. cjson.encode(kind)
      end
    elseif f ~= "at" and f ~= "w" and f ~= "o" then
      local text = scalarJson(v)
      if text == nil then
        return nil
      end
      parts[#parts + 1] = cjson.encode(f) .. ":" .. text
    end
  end
  if h["w"] == "resolved" and (k == "e" or k == "d" or k == "k") then
    parts[#parts + 1] = '"outcome":"' .. (h["o"] == "f" and "failure" or "success") .. '"'
  end
  return table.concat(parts, ",") .. "}"
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
  -- (the texts written twice, made once)
  local createdAt = isoText(wait["ca"])
  local deadline = wait["dl"] and '"' .. isoText(wait["dl"]) .. '"' or "null"
  local registered = '{"at":"' .. createdAt .. '","what":"registered"'
  if wait["d0"] ~= nil then
    registered = registered .. ',"deadline":"' .. isoText(wait["d0"]) .. '"'
  elseif wait["dl"] ~= nil then
    registered = registered .. ',"deadline":' .. deadline
  end
  if wait["sn"] ~= nil then
    registered = registered .. ',"since":"' .. isoText(wait["sn"]) .. '"'
  end
  local history = { registered .. "}" }
  for _, h in ipairs(wait["h"] or {}) do
    local text = historyJson(h)
    if text == nil then
      return nil
    end
    history[#history + 1] = text
  end
  local late = {}
  for _, ev in ipairs(wait["late"] or {}) do
    late[#late + 1] = eventRefOpen(ev) .. "}"
  end
  local ev = res["ev"]
  local resolution = '{"kind":"event","at":"' .. isoText(res["at"]) .. '","event":' .. eventRefOpen(ev)
    .. ',"payload":' .. rawJson(ev["pl"]) .. '},"outcome":"success"'
  if res["dl"] ~= nil then
    resolution = resolution .. ',"deadline":"' .. isoText(res["dl"]) .. '"'
  end
  local function isoOrNull(ms)
    return ms == nil and "null" or '"' .. isoText(ms) .. '"'
  end
  local token = wait["ti"] == nil and "null" or '{"issuedAt":"' .. isoText(wait["ti"]) .. '"}'
  local heartbeat = "null"
  if wait["hb"] ~= nil then
    heartbeat = '{"intervalMs":' .. intText(wait["hb"]) .. ',"count":' .. intText(wait["hbn"] or 0)
      .. ',"lastAt":' .. isoOrNull(wait["hbl"]) .. "}"
  end
  return '{"id":' .. cjson.encode(waitId) .. ',"tenant":' .. cjson.encode(tenant)
    .. ',"runId":' .. cjson.encode(wait["r"]) .. ',"position":' .. cjson.encode(wait["p"])
    .. ',"eventType":' .. cjson.encode(eventType) .. ',"correlationId":' .. cjson.encode(correlationId)
    .. ',"state":"resolved","createdAt":"' .. createdAt .. '","deadline":' .. deadline
    .. ',"since":' .. isoOrNull(wait["sn"]) .. ',"externalJobId":' .. (wait["j"] and cjson.encode(wait["j"]) or "null")
    .. ',"metadata":' .. rawJson(wait["m"]) .. ',"resolution":' .. resolution .. '},"consumption":null'
    .. ',"lateEvents":[' .. table.concat(late, ",") .. '],"history":[' .. table.concat(history, ",") .. "]"
    .. ',"token":' .. token .. ',"heartbeat":' .. heartbeat .. "}"
end
