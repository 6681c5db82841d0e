--[[
  registryCommit: one change of the runtime registry (tenants, host keys, producers,
  event types), applied whole or not at all, if the registry is still at the version
  the change was computed from. Bumps the version, appends the audit entries and
  publishes the new version, so every process reloads.

  KEYS[1] meta       {<prefix>:reg}:m   hash: version, keycheck
  KEYS[2] records    {<prefix>:reg}:r   hash "<kind>:<name>" -> record JSON
  KEYS[3] seed       {<prefix>:reg}:s   hash "<kind>:<name>" -> fingerprint of the config file's form at the last seed
  KEYS[4] audit      {<prefix>:reg}:a   stream of audit entries (capped)
  KEYS[5] changelog  {<prefix>:reg}:c   stream, entry id "<version>-1", field "fields": the record fields it changed, "\n"-separated (capped)

  ARGV[1] expected   the version the change was computed from ("" = any)
  ARGV[2] channel    pub/sub channel the new version is published on
  ARGV[3] audit      JSON array of audit entries {actor, action, target}
  ARGV[4] now        "" = Redis TIME
  ARGV[5..] ops      triples: target ("r" records | "s" seed), field, value ("" = delete the field)

  Returns
    { OK, version }          applied; version is the new one
    { CONFLICT, version }    the registry is at another version: nothing changed
  Appends: one audit stream entry per audit entry (fields at, actor, action, target, version);
  one changelog entry (what a process at the previous version must re-read: registryChanges).
]]
--@include "codes"
--@include "clock"

--@keys
local expected, channel = ARGV[1], ARGV[2]
local now = nowMs(ARGV[4])

local current = tonumber(redis.call("HGET", keys.meta, "version") or "0")
if expected ~= "" and tonumber(expected) ~= current then
  return { C_CONFLICT, current }
end

local changed = {}
for i = 5, #ARGV, 3 do
  local hashKey = keys.records
  if ARGV[i] == "s" then
    hashKey = keys.seed
  else
    changed[#changed + 1] = ARGV[i + 1]
  end
  if ARGV[i + 2] == "" then
    redis.call("HDEL", hashKey, ARGV[i + 1])
  else
    redis.call("HSET", hashKey, ARGV[i + 1], ARGV[i + 2])
  end
end

local version = redis.call("HINCRBY", keys.meta, "version", 1)
redis.call("XADD", keys.changelog, "MAXLEN", "~", "1000", version .. "-1", "fields", table.concat(changed, "\n"))
for _, entry in ipairs(cjson.decode(ARGV[3])) do
  redis.call(
    "XADD", keys.audit, "MAXLEN", "~", "10000", "*",
    "at", intText(now), "actor", entry["actor"], "action", entry["action"], "target", entry["target"],
    "version", version
  )
end
redis.call("PUBLISH", channel, version)
return { C_OK, version }
