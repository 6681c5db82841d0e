--[[
  The counts of any-of waits' extra index members. An any-of wait has a member per
  match key in the waiting / done index, yet is one wait: the members of its other
  match keys (all but the first, `mk`'s) are counted in fields of the waits hash, "#w" /
  "#d" (waiting / done index) for the partition and "#w<encoded tenant>" /
  "#d<encoded tenant>" for a tenant (formats/index-members.ts extraMembersField), so
  that a count of waits by index members subtracts them. Only a record with `xc`
  (registered since these counters) is counted. settleWait (settle.lua) writes the same
  out (not included there: every helper is a closure made on each call of the match).
]]
--@include "parts"

-- Adds `n` to the count of `wait`'s extra members in `index` ("w" or "d"); a count
-- that reaches 0 is removed.
local function countExtraMembers(waitsKey, wait, index, n)
  if n == 0 then
    return
  end
  local mk = wait["mk"]
  local fields = { "#" .. index, "#" .. index .. string.sub(mk, 1, skipParts(mk, 1) - 1) }
  for _, f in ipairs(fields) do
    if redis.call("HINCRBY", waitsKey, f, n) <= 0 then
      redis.call("HDEL", waitsKey, f)
    end
  end
end
