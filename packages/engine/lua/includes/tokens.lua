--[[
  Completion tokens and heartbeats (docs/api.md, "Completion tokens, failure and
  heartbeats"). Wait record fields: tk the hash of the current token (src/formats/completion-token.ts), ti when
  it was issued; hb heartbeatMs, hbn heartbeats accepted, hbl the last one's time, d0
  the registration's deadline (kept at the first heartbeat).
  A resolution's o = "f" marks a failure (absent: success), er the raw error JSON.

    -20 LATE          the deadline in force has passed (the timeout is due)
    -21 NO_HEARTBEAT  a heartbeat for a wait registered without heartbeatMs
]]
--@include "wait-record"

local C_LATE, C_NO_HEARTBEAT = -20, -21

-- Heartbeats recorded in the history; later ones only count in hbn.
local HEARTBEATS_KEPT = 100

-- Does the presented hash equal the stored one? Compared in constant time (every byte,
-- whatever differs first): neither length nor content of the stored hash leaks.
local function tokenMatches(stored, presented)
  if stored == nil or #stored ~= #presented then
    return false
  end
  local diff = 0
  for i = 1, #stored do
    diff = bit.bor(diff, bit.bxor(string.byte(stored, i), string.byte(presented, i)))
  end
  return diff == 0
end

-- Registration: a token given in the record is issued now; with heartbeatMs and no
-- deadline, the first deadline is now + heartbeatMs. Returns the deadline.
local function registrationExtras(wait, now, deadline)
  if wait["tk"] ~= nil then
    wait["ti"] = now
    pushHistory(wait, { at = now, w = "token_issued" })
  end
  if deadline == nil and wait["hb"] ~= nil then
    return now + wait["hb"]
  end
  return deadline
end

-- The wait a token or host call names: by its token hash when one is given (any
-- tenant: the token is the credential), else by the caller's tenant. nil when none.
local function loadWaitFor(waitsKey, waitId, tenantPrefix, tokenHash)
  if tokenHash ~= "" then
    local wait = loadWait(waitsKey, waitId)
    if wait == nil or not tokenMatches(wait["tk"], tokenHash) then
      return nil
    end
    return wait
  end
  return loadOwnWait(waitsKey, waitId, tenantPrefix)
end
