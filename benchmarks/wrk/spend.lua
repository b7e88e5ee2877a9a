-- POST /v1/credits/practice/spend with a new idempotency key each request and each connection's
-- own Bearer. A Free account has 3 practice credits a month, so after the first 3 spends per
-- account the answers are 403 plan_required (credits_exhausted): counted apart, not hidden.
dofile((debug.getinfo(1, "S").source:match("^@(.*/)") or "./") .. "common.lua")

bench.sliced = { "access" }
local action = os.getenv("WRK_SPEND_ACTION") or "practice_saved_flow"
local credit = os.getenv("WRK_SPEND_CREDIT") or "practice"
local counter = 0

function bench.request(slot, id)
  counter = counter + 1
  local key = bench.tag .. "-" .. tid .. "-" .. counter
  return bench.build("POST", "/v1/credits/" .. credit .. "/spend", { "Authorization: Bearer " .. access[slot], id },
    '{"action":"' .. action .. '","idempotency_key":"' .. key .. '"}')
end

function bench.response(slot, status, headers, body)
  if status == 200 then
    bench.count("spent")
  elseif status == 403 and body:find('"plan_required"', 1, true) then
    bench.count("refused_credits_exhausted")
  end
end
