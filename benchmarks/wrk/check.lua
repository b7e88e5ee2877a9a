-- POST /v1/entitlements/check {"action": WRK_CHECK_ACTION} with each connection's own Bearer.
-- The default, practice_saved_flow, is Handz's credit rule: the engine sums the account's credit
-- ledger for the month.
dofile((debug.getinfo(1, "S").source:match("^@(.*/)") or "./") .. "common.lua")

bench.sliced = { "access" }
local body = '{"action":"' .. (os.getenv("WRK_CHECK_ACTION") or "practice_saved_flow") .. '"}'

function bench.request(slot, id)
  return bench.build("POST", "/v1/entitlements/check", { "Authorization: Bearer " .. access[slot], id }, body)
end

function bench.response(slot, status, headers, body)
  if status ~= 200 then return end
  bench.count(body:find('"allowed":true', 1, true) and "allowed" or "refused")
end
