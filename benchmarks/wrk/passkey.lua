-- POST /v1/passkeys/authentication/verify: a passkey sign-in's second half. Each body is a
-- discoverable assertion prepared by benchmarks/wrk/passkeys.py over a challenge the server
-- opened for it (one line each of the file WRK_PASSKEY_BODIES), good exactly once: thread t of
-- T sends lines t, t + T, t + 2T, ... once each. A thread that runs out sends its last body
-- again (answered 400 `challenge_invalid`) and counts `bodies_exhausted`, which fails the run.
dofile((debug.getinfo(1, "S").source:match("^@(.*/)") or "./") .. "common.lua")

function bench.init()
  local path = os.getenv("WRK_PASSKEY_BODIES") or error("WRK_PASSKEY_BODIES is not set (the harness prepares it)")
  bodies, next_body = {}, 1
  local index = 0
  for line in io.lines(path) do
    if index % bench.threads == tid - 1 then bodies[#bodies + 1] = line end
    index = index + 1
  end
end

function bench.request(slot, id)
  -- wrk's one check of the request's shape (never sent) must not use up a body.
  if verify_pending then
    verify_pending = false
    return bench.build("POST", "/v1/passkeys/authentication/verify", nil, bodies[1])
  end
  local body = bodies[next_body]
  if body then
    next_body = next_body + 1
  else
    body = bodies[#bodies]
    bench.count("bodies_exhausted")
  end
  return bench.build("POST", "/v1/passkeys/authentication/verify", nil, body)
end

function bench.response(slot, status, headers, body)
  if status == 200 and not body:find('"access_token"', 1, true) then bench.count("answers_without_session") end
end
