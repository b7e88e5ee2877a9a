-- POST /auth/v1/token?grant_type=refresh_token: the refresh of the Supabase-compatible surface
-- (what supabase-swift sends), beside refresh.lua's native one, on chains of its own.
dofile((debug.getinfo(1, "S").source:match("^@(.*/)") or "./") .. "common.lua")

bench.sliced = { "refresh" }

local apikey = "apikey: " .. (os.getenv("WRK_SUPABASE_ANON_KEY") or error("WRK_SUPABASE_ANON_KEY is not set (the harness sets it)"))

function bench.request(slot, id)
  return bench.refresh_request(slot, id, "/auth/v1/token?grant_type=refresh_token", { apikey })
end

bench.response = bench.refresh_response
