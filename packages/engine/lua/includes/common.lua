--[[
  Shared helpers, pulled into every script by the build step (scripts/build-lua.mjs).

  Outcome codes (mirrored by `Code` in src/codes.ts; keep both in step):
     1 CREATED       2 EXISTS        3 CONFLICT      4 DUPLICATE
     5 PENDING       6 RESOLVED      7 NOT_DUE       8 BACKLOG
     9 OK
    -1 NOT_FOUND    -2 NOT_WAITING  -3 NOT_RESOLVED

  Records are JSON (cjson) with short field names, except the compact form of a
  plain waiting wait (decodeWait); see src/records.ts.
  Wait states: w waiting, r resolved, t timed_out, c cancelled.
  Event states: p pending, m matched, b buffered, l late, x expired.
  The inbox holds "<encoded match key><padded id><eventKey>"; an encoded match key
  (length-prefixed parts) is prefix-free, so (all scores 0) "[mk" .. "(mk\255"
  ranges over exactly the members of that match key.
  The wait indexes (waiting, done) hold
  "<index key 12><wait id body 16>" (28 bytes: jemalloc's 32-byte class), the index
  key being 4-character digests of the tenant, (tenant, type) and the match key, so
  that prefixes of 4, 8 or 12 characters select a tenant, a type or a match key;
  digests may collide, so every reader checks the wait's own match key.
]]
local C_CREATED, C_EXISTS, C_CONFLICT, C_DUPLICATE = 1, 2, 3, 4
local C_PENDING, C_RESOLVED, C_NOT_DUE, C_BACKLOG, C_OK = 5, 6, 7, 8, 9
local C_NOT_FOUND, C_NOT_WAITING, C_NOT_RESOLVED = -1, -2, -3
-- the same codes as the digits of a reply string (Redis would format numbers through sprintf)
local D_CREATED, D_EXISTS, D_CONFLICT, D_PENDING = "1", "2", "3", "5"

-- The clock is Redis TIME; a non-empty override (tests only) replaces it.
local function nowMs(override)
  if override and override ~= "" then
    return tonumber(override)
  end
  local t = redis.call("TIME")
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- Fixed-width form of a stream id so that lexical order is id order:
-- "%015d-%010d" of its two numbers, built without number conversions.
local function padId(sid)
  local dash = string.find(sid, "-", 1, true)
  local ms, seq = string.sub(sid, 1, dash - 1), string.sub(sid, dash + 1)
  return string.rep("0", 15 - #ms) .. ms .. "-" .. string.rep("0", 10 - #seq) .. seq
end

-- Fixed-width form of a time, comparable with padId() output.
local function padMs(ms)
  return string.format("%015d", ms)
end

-- Position just after the first n length-prefixed parts ("<len>:<bytes>") of s
-- that start at `from` (default 1).
local function skipParts(s, n, from)
  local pos = from or 1
  for _ = 1, n do
    local colon = string.find(s, ":", pos, true)
    local len = tonumber(string.sub(s, pos, colon - 1))
    pos = colon + 1 + len
  end
  return pos
end

local B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"

-- 24 bits of SHA-1 as 4 base64url characters (src/keys.ts computes the same).
local function digest4(s)
  local n = tonumber(string.sub(redis.sha1hex(s), 1, 6), 16)
  local a, b, c, d = math.floor(n / 262144), math.floor(n / 4096) % 64, math.floor(n / 64) % 64, n % 64
  return string.sub(B64, a + 1, a + 1) .. string.sub(B64, b + 1, b + 1) .. string.sub(B64, c + 1, c + 1) .. string.sub(B64, d + 1, d + 1)
end

local indexKeys = {}
-- The 12-character index key of an encoded match key (memoized per call).
local function indexKey(mk)
  local ik = indexKeys[mk]
  if ik == nil then
    local t = skipParts(mk, 1)
    local tt = skipParts(mk, 1, t)
    ik = digest4(string.sub(mk, 1, t - 1)) .. digest4(string.sub(mk, 1, tt - 1)) .. digest4(mk)
    indexKeys[mk] = ik
  end
  return ik
end

-- A wait's member in the waiting / done index: index key + the id after "w<p>.".
local function waitMember(wait, waitId)
  return indexKey(wait["mk"]) .. string.sub(waitId, string.find(waitId, ".", 1, true) + 1)
end

-- The next field of a packed argument at pos: a 5-character length header (base 64,
-- digit = byte - 48, most significant first; src/scripts.ts writes it) then that many
-- bytes. Returns the bytes and the position after them. No number parsing: cheap.
local byteAt, substring = string.byte, string.sub -- upvalues: no global lookups per field
local function nextField(s, pos)
  local a, b, c, d, e = byteAt(s, pos, pos + 4)
  local len = ((((a - 48) * 64 + (b - 48)) * 64 + (c - 48)) * 64 + (d - 48)) * 64 + (e - 48)
  return substring(s, pos + 5, pos + 4 + len), pos + 5 + len
end

-- Splits a packed argument into rows of `width` fields (nextField each): returns one
-- list per field position (columns[1] = every row's first field, ...).
local function unpackRows(packed, width)
  local columns = {}
  for c = 1, width do
    columns[c] = {}
  end
  local pos, n = 1, 0
  while pos <= #packed do
    n = n + 1
    for c = 1, width do
      columns[c][n], pos = nextField(packed, pos)
    end
  end
  return columns
end

-- The ingest steps' arguments: rows of (encoded event key, value) packed in one
-- argument, and the hash field "<prefix><event key>" of each read with one HMGET.
-- Returns the event keys, the values, the fields and the stored values (false: none).
local function loadPackedRows(hashKey, packed, prefix)
  local rows = unpackRows(packed, 2)
  local eventKeys, fields = rows[1], {}
  for n = 1, #eventKeys do
    fields[n] = prefix .. eventKeys[n]
  end
  return eventKeys, rows[2], fields, redis.call("HMGET", hashKey, unpack(fields))
end

local function pushHistory(wait, entry)
  local h = wait["h"]
  if h == nil then
    h = {}
    wait["h"] = h
  end
  h[#h + 1] = entry
end

-- The record in a hash field decoded by `decode`, or nil.
local function loadField(hashKey, field, decode)
  local raw = redis.call("HGET", hashKey, field)
  if not raw then
    return nil
  end
  return decode(raw)
end

local function loadJson(hashKey, field)
  return loadField(hashKey, field, cjson.decode)
end

local function saveJson(hashKey, field, value)
  redis.call("HSET", hashKey, field, cjson.encode(value))
end

--[[
  Wait records are JSON, except a wait that is `waiting` with nothing but its
  registration fields, which is kept as compact text (about 35 bytes smaller: most
  waits are such): the encoded parts (mk, r, p) then "<ca>,<dl>,<sn>" (dl and sn may
  be empty). src/records.ts reads both forms.
]]
local WAIT_BASE = { mk = true, r = true, p = true, s = true, ca = true, dl = true, sn = true }

local function decodeWait(raw)
  if string.byte(raw, 1) == 123 then
    return cjson.decode(raw)
  end
  local parts, pos = {}, 1
  for i = 1, 3 do
    local after = skipParts(raw, 1, pos)
    parts[i] = string.sub(raw, string.find(raw, ":", pos, true) + 1, after - 1)
    pos = after
  end
  local ca, dl, sn = string.match(raw, "^(%d+),(%d*),(%d*)$", pos)
  return { s = "w", mk = parts[1], r = parts[2], p = parts[3], ca = tonumber(ca), dl = tonumber(dl), sn = tonumber(sn) }
end

local function intText(n)
  if n == nil then
    return ""
  end
  return string.format("%d", n)
end

local function encodeWait(wait)
  if wait["s"] == "w" then
    for k in pairs(wait) do
      if not WAIT_BASE[k] then
        return cjson.encode(wait)
      end
    end
    local mk, r, p = wait["mk"], wait["r"], wait["p"]
    return #mk .. ":" .. mk .. #r .. ":" .. r .. #p .. ":" .. p .. intText(wait["ca"]) .. "," .. intText(wait["dl"]) .. "," .. intText(wait["sn"])
  end
  return cjson.encode(wait)
end

local function loadWait(waitsKey, waitId)
  return loadField(waitsKey, waitId, decodeWait)
end

local function saveWait(waitsKey, waitId, wait)
  redis.call("HSET", waitsKey, waitId, encodeWait(wait))
end

local function eventRef(ev)
  return { pr = ev["pr"], id = ev["id"], at = ev["at"], sid = ev["sid"] }
end

--[[
  Moves a waiting wait to a terminal state: leaves the waiting and deadline indexes,
  enters the done index (so later events of its match key are recorded as late),
  schedules its removal after retention, and puts the resolution on the outbox.
]]
local function settleWait(keys, waitId, wait, state, resolution, historyEntry, now, retentionMs)
  wait["s"] = state
  wait["res"] = resolution
  pushHistory(wait, historyEntry)
  saveWait(keys.waits, waitId, wait)
  local member = waitMember(wait, waitId)
  redis.call("ZREM", keys.waiting, member)
  redis.call("ZADD", keys.done, "0", member)
  redis.call("ZREM", keys.deadlines, waitId)
  redis.call("ZADD", keys.expiry, intText(now + retentionMs), "w:" .. waitId)
  redis.call("XADD", keys.outbox, "*", "w", waitId, "k", resolution["k"])
end

-- Does the wait belong to the tenant? tenantPrefix is the encoded tenant ("" = any, admin).
local function ownedBy(wait, tenantPrefix)
  return tenantPrefix == "" or string.sub(wait["mk"], 1, #tenantPrefix) == tenantPrefix
end

-- The wait record, when it exists and belongs to the tenant.
local function loadOwnWait(waitsKey, waitId, tenantPrefix)
  local wait = loadWait(waitsKey, waitId)
  if wait == nil or not ownedBy(wait, tenantPrefix) then
    return nil
  end
  return wait
end
