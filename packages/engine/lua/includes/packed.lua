--[[
  Packed arguments: many fields in one ARGV, each a 5-character length header (base
  64, digit = byte - 48, most significant first; src/transitions/packer.ts writes it) then that
  many bytes. Cheaper to send than one argument per field, and read without number
  parsing.
]]

-- The next field of a packed argument at pos: its bytes and the position after them.
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

-- The ingest steps' arguments: rows of (encoded event key, value), as unpackRows gives
-- them, and the hash field "<prefix><event key>" of each read with one HMGET. Returns
-- the event keys, the values, the fields and the stored values (false: none).
local function loadRows(hashKey, rows, prefix)
  local eventKeys, fields = rows[1], {}
  for n = 1, #eventKeys do
    fields[n] = prefix .. eventKeys[n]
  end
  return eventKeys, rows[2], fields, redis.call("HMGET", hashKey, unpack(fields))
end

-- loadRows of such rows packed in one argument.
local function loadPackedRows(hashKey, packed, prefix)
  return loadRows(hashKey, unpackRows(packed, 2), prefix)
end
