-- Account metadata (issue 46): the holder's free JSON (GoTrue's user_metadata) and the
-- operator's (app_metadata), each a compact JSON object of at most 4 KiB, NULL when empty.
ALTER TABLE users ADD COLUMN user_metadata TEXT;
ALTER TABLE users ADD COLUMN app_metadata TEXT;
