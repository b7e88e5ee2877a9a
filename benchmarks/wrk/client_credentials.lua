-- POST /oauth/token, grant_type=client_credentials: a backend's token for itself (no account).
-- The harness registers one confidential client and passes its `Basic` credentials in
-- WRK_MACHINE_BASIC; every request checks the secret and issues a new signed token.
dofile((debug.getinfo(1, "S").source:match("^@(.*/)") or "./") .. "common.lua")

local request_text

function bench.request()
  if not request_text then
    local basic = os.getenv("WRK_MACHINE_BASIC") or ""
    if basic == "" then error("WRK_MACHINE_BASIC is not set (the harness registers the client)") end
    local body = "grant_type=client_credentials&scope=api%3Aread"
    request_text = table.concat({
      "POST /oauth/token HTTP/1.1\r\nHost: ", wrk.headers["Host"], "\r\n",
      "Authorization: ", basic, "\r\n",
      "Content-Type: application/x-www-form-urlencoded\r\nContent-Length: ", #body, "\r\n\r\n", body,
    })
  end
  return request_text
end
