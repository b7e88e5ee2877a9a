-- POST /v1/auth/login with each account's right password (one Argon2id verification each).
dofile((debug.getinfo(1, "S").source:match("^@(.*/)") or "./") .. "common.lua")

bench.sliced = { "email", "password" }
bench.shareable = true

function bench.request(slot, id)
  return bench.build("POST", "/v1/auth/login", { id },
    '{"email":"' .. email[slot] .. '","password":"' .. password[slot] .. '"}')
end
