-- POST /v1/auth/refresh: every connection rotates its own refresh-token chain. A chain's slot is
-- in flight at most once (common.lua), and the successor token read from each 200 answer is the
-- one the chain sends next, so no refresh token is ever presented twice.
dofile((debug.getinfo(1, "S").source:match("^@(.*/)") or "./") .. "common.lua")

bench.sliced = { "refresh" }

-- Every token this thread has sent: a token sent twice would be a bookkeeping bug (Gatehouse
-- forgives a replay within its 10 s race window, so the answers alone would not show it).
local sent = {}

function bench.request(slot, id)
  if id ~= "X-Request-Id: wrkverify" then
    if sent[refresh[slot]] then bench.count("duplicate_tokens_sent") end
    sent[refresh[slot]] = true
  end
  return bench.build("POST", "/v1/auth/refresh", { id }, '{"refresh_token":"' .. refresh[slot] .. '"}')
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
