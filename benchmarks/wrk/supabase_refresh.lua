-- POST /auth/v1/token?grant_type=refresh_token: the refresh of the Supabase-compatible surface
-- (what supabase-swift sends), beside refresh.lua's native one on the same chains. Each chain's
-- successor is read from the answer and sent next, so no token is presented twice.
dofile((debug.getinfo(1, "S").source:match("^@(.*/)") or "./") .. "common.lua")

bench.sliced = { "refresh" }

local apikey = "apikey: " .. (os.getenv("WRK_SUPABASE_ANON_KEY") or error("WRK_SUPABASE_ANON_KEY is not set (the harness sets it)"))
local sent = {}

function bench.request(slot, id)
  if id ~= "X-Request-Id: wrkverify" then
    if sent[refresh[slot]] then bench.count("duplicate_tokens_sent") end
    sent[refresh[slot]] = true
  end
  return bench.build("POST", "/auth/v1/token?grant_type=refresh_token", { id, apikey }, '{"refresh_token":"' .. refresh[slot] .. '"}')
end

function bench.response(slot, status, headers, body)
  if not slot then return end
  if status == 200 then
    local token = body:match('"refresh_token"%s*:%s*"([^"]+)"')
    if token then
      refresh[slot] = token
    else
      bench.count("answers_without_refresh_token")
    end
  else
    bench.count("chains_broken")
  end
end
