-- GET /.well-known/jwks.json (no account).
dofile((debug.getinfo(1, "S").source:match("^@(.*/)") or "./") .. "common.lua")

local request_text

function bench.request()
  request_text = request_text or bench.build("GET", "/.well-known/jwks.json")
  return request_text
end
