-- GET /v1/handles/{handle}, alternating a handle some seeded account holds and one nobody does
-- (a new one each time). The answers are counted as taken / available, so the mix is visible.
dofile((debug.getinfo(1, "S").source:match("^@(.*/)") or "./") .. "common.lua")

bench.shared = { "taken" }

local counter = 0

function bench.request()
  counter = counter + 1
  local handle
  if counter % 2 == 0 and #taken > 0 then
    handle = taken[(counter / 2) % #taken + 1]
  else
    -- "wf", the run tag (6 characters), the thread and a counter: at most 20 characters.
    handle = "wf" .. bench.tag .. tid .. "x" .. (counter % 10000000)
  end
  return bench.build("GET", "/v1/handles/" .. handle)
end

function bench.response(slot, status, headers, body)
  if status ~= 200 then return end
  if body:find('"available":false', 1, true) then
    bench.count(body:find('"reason":"taken"', 1, true) and "answered_taken" or "answered_unavailable_other")
  else
    bench.count("answered_available")
  end
end
