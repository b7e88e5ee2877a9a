-- GET /v1/config (no account, no If-None-Match): the preset's public configuration, 200 with
-- the whole document each time.
dofile((debug.getinfo(1, "S").source:match("^@(.*/)") or "./") .. "common.lua")

local request_text

function bench.request()
  request_text = request_text or bench.build("GET", "/v1/config")
  return request_text
end
