--[[
  Outcome codes, the first element of every reply. The build emits them as the
  TypeScript `Code` (src/generated/lua.ts), so this is their one home:

     1 CREATED       2 EXISTS        3 CONFLICT      4 DUPLICATE
     5 PENDING       6 RESOLVED      7 NOT_DUE       8 BACKLOG
     9 OK
    -1 NOT_FOUND    -2 NOT_WAITING  -3 NOT_RESOLVED
    -4 OVER_QUOTA   -5 OVER_RATE
]]
local C_CREATED, C_EXISTS, C_CONFLICT, C_DUPLICATE = 1, 2, 3, 4
local C_PENDING, C_RESOLVED, C_NOT_DUE, C_BACKLOG, C_OK = 5, 6, 7, 8, 9
local C_NOT_FOUND, C_NOT_WAITING, C_NOT_RESOLVED = -1, -2, -3
local C_OVER_QUOTA, C_OVER_RATE = -4, -5
-- the same codes as the digits of a reply string (Redis would format numbers through sprintf)
local D_CREATED, D_EXISTS, D_CONFLICT, D_PENDING = "1", "2", "3", "5"
