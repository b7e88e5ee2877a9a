-- Accounts imported from Firebase or Supabase keep when their owner last signed in there
-- (unix seconds); GoTrue's user object reads it beside this server's own sessions.
ALTER TABLE users ADD COLUMN last_sign_in_at BIGINT;
