-- Shared by the scenario scripts of benchmarks/wrk (each one loads it with dofile and then
-- fills in `bench.request`, and optionally `bench.sliced`, `bench.shared`, `bench.response`).
--
-- Accounts. benchmarks/wrk/harness.py signs accounts up and writes them to a Lua file named by
-- WRK_ACCOUNTS that returns flat, parallel arrays ({email = {...}, password = {...},
-- access = {...}, refresh = {...}, taken = {...}}). setup(thread), which runs in wrk's main Lua
-- state, hands each thread its own slice of the arrays named in `bench.sliced` (account i goes
-- to thread (i - 1) % WRK_THREADS + 1) and the whole of the arrays named in `bench.shared`.
-- (wrk copies only flat tables between states; a nested table crashes it.)
--
-- One account per connection. wrk keeps one request in flight per connection but does not
-- tell the script which connection calls request() or whose answer response() sees. So each
-- thread keeps its accounts ("slots") in a FIFO of free slots: request() takes one and sends
-- its number in X-Request-Id ("wrk<thread>s<slot>n<sequence>"), which Gatehouse echoes on every
-- answer, errors included; response() reads it back and returns that slot to the FIFO. A thread
-- has as many slots as connections, and a connection asks for a request only when its previous
-- answer has been read, so a free slot always exists and no slot is ever in flight twice: for
-- `refresh` that means every chain has exactly one request at a time and rotates strictly. A slot
-- whose request was lost (socket error, then wrk reconnects) would stay in flight; only then,
-- with no free slot left, the oldest one in flight is reused, and `slot_reused_after_loss`
-- counts it (a scenario that sets `bench.shareable` shares accounts instead: login, where
-- me_with_logins may have more login connections than accounts). An answer whose X-Request-Id names no slot in flight counts as `unmatched_answers`.
--
-- Behind a proxy that sets an X-Request-Id of its own (the cluster's nginx: `harness.py cluster`
-- finds that out and sets WRK_BEHIND_PROXY=1) an answer cannot name its slot. Then a scenario
-- that sets `bench.identify` ({column = NAME, pattern = LUA_PATTERN}: the accounts column whose
-- values identify a slot, which `bench.sliced` must list, and the pattern whose capture finds
-- that value in an answer's body) still tracks its slots, by the body (`slots_found_by_body`):
-- refresh, whose chains must never have two requests in flight, by the session's id. The other
-- scenarios take their accounts in turn, untracked, where sharing one is harmless (GET /v1/me,
-- login, check).
--
-- done() prints one line "WRK_RESULT {json}" with wrk's summary, the latency percentiles (µs),
-- every status code counted in response() and the scenario's own counters (`bench.count`).

bench = bench or {}

local function env(name, default)
  local value = os.getenv(name)
  if value == nil or value == "" then return default end
  return value
end

bench.tag = env("WRK_RUN_TAG", "wrk")
bench.threads = tonumber(env("WRK_THREADS", "1"))
bench.scenario = env("WRK_SCENARIO", "?")
bench.behind_proxy = env("WRK_BEHIND_PROXY", "") == "1"

-- Main state ------------------------------------------------------------------------------

local threads = {}
local data

local function load_data()
  if not data then
    local path = os.getenv("WRK_ACCOUNTS")
    if not path then error("WRK_ACCOUNTS is not set (the harness writes the accounts file)") end
    data = dofile(path)
  end
  return data
end

function setup(thread)
  local id = #threads + 1
  threads[id] = thread
  thread:set("tid", id)
  if bench.sliced or bench.shared then
    local accounts = load_data()
    for _, name in ipairs(bench.sliced or {}) do
      local column = accounts[name] or error("the accounts file has no " .. name)
      local slice = {}
      for i = id, #column, bench.threads do slice[#slice + 1] = column[i] end
      thread:set(name, slice)
    end
    for _, name in ipairs(bench.shared or {}) do
      thread:set(name, accounts[name] or error("the accounts file has no " .. name))
    end
  end
end

local function encode(value)
  local kind = type(value)
  if kind == "number" then
    if value ~= value or value == math.huge or value == -math.huge then return "null" end
    if value == math.floor(value) and math.abs(value) < 1e15 then return string.format("%d", value) end
    return string.format("%.6f", value)
  elseif kind == "string" then
    return '"' .. value:gsub('[%c"\\]', function(c) return string.format("\\u%04x", c:byte()) end) .. '"'
  elseif kind == "boolean" then
    return tostring(value)
  elseif kind == "table" then
    local keys = {}
    for key in pairs(value) do keys[#keys + 1] = tostring(key) end
    table.sort(keys)
    local parts = {}
    for _, key in ipairs(keys) do
      local item = value[key]
      if item == nil then item = value[tonumber(key)] end
      parts[#parts + 1] = encode(key) .. ":" .. encode(item)
    end
    return "{" .. table.concat(parts, ",") .. "}"
  end
  return "null"
end

function done(summary, latency, requests)
  local statuses, extra = {}, {}
  for _, thread in ipairs(threads) do
    for code, n in pairs(thread:get("counts") or {}) do
      statuses[tostring(code)] = (statuses[tostring(code)] or 0) + n
    end
    for name, n in pairs(thread:get("extra") or {}) do extra[name] = (extra[name] or 0) + n end
  end
  local result = {
    scenario = bench.scenario,
    threads = #threads,
    duration_us = summary.duration,
    requests = summary.requests,
    bytes = summary.bytes,
    errors = {
      connect = summary.errors.connect, read = summary.errors.read, write = summary.errors.write,
      status = summary.errors.status, timeout = summary.errors.timeout,
    },
    latency_us = {
      p50 = latency:percentile(50), p75 = latency:percentile(75), p90 = latency:percentile(90),
      p99 = latency:percentile(99), p99_9 = latency:percentile(99.9), p99_99 = latency:percentile(99.99),
      min = latency.min, max = latency.max, mean = latency.mean, stdev = latency.stdev,
    },
    statuses = statuses,
    extra = extra,
  }
  io.write("WRK_RESULT ", encode(result), "\n")
end

-- Thread states ---------------------------------------------------------------------------

function bench.count(name, n)
  extra[name] = (extra[name] or 0) + (n or 1)
end

-- A raw HTTP/1.1 request; `headers` is a list of "Name: value" lines.
-- A refresh-token chain per slot (refresh.lua, supabase_refresh.lua): `bench.refresh_request`
-- sends the slot's current token (counting one sent twice: Gatehouse forgives a replay within
-- its 10 s race window, so the answers alone would not show a bookkeeping bug) and
-- `bench.refresh_response` keeps the successor each 200 answer carries.
local sent_tokens = {}

function bench.refresh_request(slot, id, path, headers)
  if id ~= "X-Request-Id: wrkverify" then
    if sent_tokens[refresh[slot]] then bench.count("duplicate_tokens_sent") end
    sent_tokens[refresh[slot]] = true
  end
  local lines = { id }
  for _, line in ipairs(headers or {}) do lines[#lines + 1] = line end
  return bench.build("POST", path, lines, '{"refresh_token":"' .. refresh[slot] .. '"}')
end

function bench.refresh_response(slot, status, headers, body)
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

function bench.build(method, path, headers, body)
  local parts = { method, " ", path, " HTTP/1.1\r\nHost: ", wrk.headers["Host"], "\r\n" }
  for _, line in ipairs(headers or {}) do
    parts[#parts + 1] = line
    parts[#parts + 1] = "\r\n"
  end
  if body then
    parts[#parts + 1] = "Content-Type: application/json\r\nContent-Length: " .. #body .. "\r\n"
  end
  parts[#parts + 1] = "\r\n"
  parts[#parts + 1] = body or ""
  return table.concat(parts)
end

function init(args)
  counts = {}
  extra = {}
  sequence = 0
  local first = bench.sliced and _G[bench.sliced[1]]
  slots = first and #first or 0
  free, head, tail = {}, 1, 0
  for slot = 1, slots do
    tail = tail + 1
    free[tail] = slot
  end
  in_flight = {}
  owner = {}
  if bench.identify then
    for slot, key in ipairs(_G[bench.identify.column] or error("bench.identify's column is not in bench.sliced")) do
      owner[key] = slot
    end
  end
  -- wrk calls request() once on its first thread, right after init() and before any connection
  -- exists, to check the request's shape (script_verify_request); that request is never sent.
  verify_pending = (tid == 1)
  if bench.init then bench.init() end
end

local function take()
  local slot
  if bench.behind_proxy and not bench.identify then
    -- The answers cannot name their slot (the proxy's X-Request-Id): accounts in turn, untracked.
    shared_turn = (shared_turn or 0) % slots + 1
    return shared_turn, 0
  end
  if head <= tail then
    slot = free[head]
    free[head] = nil
    head = head + 1
  elseif bench.shareable then
    -- More connections than accounts (me_with_logins' 8 logins with fewer than 8 accounts):
    -- a scenario where sharing an account is harmless takes the accounts in turn, untracked.
    shared_turn = (shared_turn or 0) % slots + 1
    bench.count("requests_on_shared_accounts")
    return shared_turn, 0
  else
    local oldest
    for candidate, sent in pairs(in_flight) do
      if not oldest or sent < in_flight[oldest] then oldest = candidate end
    end
    slot = oldest or 1
    bench.count("slot_reused_after_loss")
  end
  sequence = sequence + 1
  in_flight[slot] = sequence
  return slot, sequence
end

local function header(headers, name)
  local value = headers[name]
  if value then return value end
  local lowered = name:lower()
  for key, item in pairs(headers) do
    if key:lower() == lowered then return item end
  end
  return nil
end

local function release(slot)
  in_flight[slot] = nil
  tail = tail + 1
  free[tail] = slot
  return slot
end

local function give_back(headers, body)
  local id = header(headers, "X-Request-Id")
  local slot, sent = nil, nil
  if id then slot, sent = id:match("^wrk%d+s(%d+)n(%d+)$") end
  slot, sent = tonumber(slot), tonumber(sent)
  if sent == 0 then return nil end -- a shared account's request (take)
  if slot and in_flight[slot] == sent then return release(slot) end
  if bench.behind_proxy then
    if not bench.identify then return nil end -- untracked (take)
    local key = body and body:match(bench.identify.pattern)
    slot = key and owner[key]
    if slot and in_flight[slot] then
      bench.count("slots_found_by_body")
      return release(slot)
    end
  end
  bench.count("unmatched_answers")
  return nil
end

function request()
  if slots == 0 then return bench.request(nil, nil) end
  if verify_pending then
    verify_pending = false
    return bench.request(1, "X-Request-Id: wrkverify")
  end
  local slot, sent = take()
  return bench.request(slot, "X-Request-Id: wrk" .. tid .. "s" .. slot .. "n" .. sent)
end

function response(status, headers, body)
  counts[status] = (counts[status] or 0) + 1
  local slot = nil
  if slots > 0 then slot = give_back(headers, body) end
  if bench.response then bench.response(slot, status, headers, body) end
end
