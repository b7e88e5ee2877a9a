-- POST /v1/passkeys/authentication/options with no address (a discoverable sign-in): a passkey
-- sign-in's first half, one stored single-use challenge each.
dofile((debug.getinfo(1, "S").source:match("^@(.*/)") or "./") .. "common.lua")

function bench.request(slot, id)
  return bench.build("POST", "/v1/passkeys/authentication/options", nil, "{}")
end
