-- The operators' search by a prefix that many accounts share, none of them among the newest
-- (issue 65): the prefix indexes of migration 35 hold a prefix's matches in the order of their
-- address, so the newest 50 of 100,000 such matches meant reading all 100,000. These hold each
-- week's matches together (the week of `created_at`, counted from 1970), and the search goes back
-- a week at a time until it has a page.
CREATE INDEX IF NOT EXISTS users_email_prefix_weekly ON users (created_at / 604800, email_normalized, created_at, id);
CREATE INDEX IF NOT EXISTS users_handle_prefix_weekly ON users (created_at / 604800, handle, created_at, id);
