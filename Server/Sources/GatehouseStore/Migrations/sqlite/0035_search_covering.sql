-- The operators' search by a prefix of the address or the handle orders its matches newest first
-- and fetches only the page's accounts (issue 65). These indexes answer each match's
-- (created_at, id) from the index alone, so a prefix shared by tens of thousands of accounts is
-- ordered without reading each of their rows (the unique indexes hold only the row's number).
CREATE INDEX IF NOT EXISTS users_email_prefix_dated ON users (email_normalized, created_at, id);
CREATE INDEX IF NOT EXISTS users_handle_prefix_dated ON users (handle, created_at, id);
