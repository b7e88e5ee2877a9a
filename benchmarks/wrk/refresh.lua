-- POST /v1/auth/refresh: every connection rotates its own refresh-token chain. A chain's slot is
-- in flight at most once (common.lua), and the successor token read from each 200 answer is the
-- one the chain sends next, so no refresh token is ever presented twice.
dofile((debug.getinfo(1, "S").source:match("^@(.*/)") or "./") .. "common.lua")

bench.sliced = { "refresh", "session" }
-- Behind a proxy that replaces X-Request-Id (common.lua), an answer's slot is its session's id.
bench.identify = { column = "session", pattern = '"session_id"%s*:%s*"([^"]+)"' }

function bench.request(slot, id)
  return bench.refresh_request(slot, id, "/v1/auth/refresh")
end

bench.response = bench.refresh_response
