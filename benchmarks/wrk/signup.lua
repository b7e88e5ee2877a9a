-- POST /v1/auth/signup, a new address every request: the run's random tag (WRK_RUN_TAG), the
-- thread and a counter.
dofile((debug.getinfo(1, "S").source:match("^@(.*/)") or "./") .. "common.lua")

local counter = 0

function bench.request()
  counter = counter + 1
  local address = "wrk-" .. bench.tag .. "-t" .. tid .. "-" .. counter .. "@example.com"
  return bench.build("POST", "/v1/auth/signup", nil,
    '{"email":"' .. address .. '","password":"wrk signup load ' .. bench.tag .. '"}')
end
