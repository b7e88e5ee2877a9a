-- Issue 60: one issuer for every session. `SessionIssuer` records the door each session was
-- opened through (`SessionDoor`: password, magic link, the OpenID provider's code exchange, the
-- hand-over, …). Sessions from before it was stored keep NULL.
ALTER TABLE sessions ADD COLUMN door TEXT;
