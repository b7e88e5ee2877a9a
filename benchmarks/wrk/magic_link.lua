-- POST /v1/auth/magic-link for the loaded accounts' addresses (load<N>@example.com, the loader's;
-- benchmarks/scale/run.py), in turn: thread t asks for N = WRK_MAGIC_START + t - 1, then every
-- WRK_THREADS-th after it, modulo WRK_MAGIC_ACCOUNTS, so that no address is asked for twice until
-- every one has been. An address asked for again within its preset's interval answers 429, which
-- the result's statuses show (run.py's preset lets it ask again at once).
dofile((debug.getinfo(1, "S").source:match("^@(.*/)") or "./") .. "common.lua")

bench.sliced = { "email" }

local accounts = tonumber(os.getenv("WRK_MAGIC_ACCOUNTS") or "") or error("WRK_MAGIC_ACCOUNTS is not set")
local start = tonumber(os.getenv("WRK_MAGIC_START") or "0")
local following

function bench.request(slot, id)
  following = following or start + tid - 1
  local index = following % accounts
  following = following + bench.threads
  return bench.build("POST", "/v1/auth/magic-link", { id }, '{"email":"load' .. index .. '@example.com"}')
end
