-- GET /no/such/path (no account): a path no route matches, answered 404 by the router. With
-- jwks.lua (a static answer held in memory) it brackets what the framework costs per request
-- (the `ceiling` scenario).
dofile((debug.getinfo(1, "S").source:match("^@(.*/)") or "./") .. "common.lua")

local request_text

function bench.request()
  request_text = request_text or bench.build("GET", "/no/such/path")
  return request_text
end
