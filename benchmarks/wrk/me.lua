-- GET /v1/me with a Bearer access token; every connection uses its own account (common.lua).
dofile((debug.getinfo(1, "S").source:match("^@(.*/)") or "./") .. "common.lua")

bench.sliced = { "access" }

function bench.request(slot, id)
  return bench.build("GET", "/v1/me", { "Authorization: Bearer " .. access[slot], id })
end
