-- Issue 65: every statement the store sends is explained by the plan check
-- (Server/Tests/plans/check.py); these are the reads and sweeps it found scanning a table that
-- grows with accounts or with time. Each one now walks an index. `IF NOT EXISTS`: an operator
-- of a large PostgreSQL database may build them beforehand with CREATE INDEX CONCURRENTLY, which
-- blocks no writes (docs/scaling.md, "As the data grows").
-- The sweeps of expired console and provider sign-ins, and of factors never confirmed.
CREATE INDEX IF NOT EXISTS console_sessions_expiry ON console_sessions (expires_at);
CREATE INDEX IF NOT EXISTS oauth_browser_sessions_expiry ON oauth_browser_sessions (expires_at);
CREATE INDEX IF NOT EXISTS mfa_factors_unconfirmed ON mfa_factors (created_at) WHERE confirmed_at IS NULL;
-- An account's passkey ceremonies and provider codes, read and deleted with the account.
CREATE INDEX IF NOT EXISTS passkey_challenges_user ON passkey_challenges (user_id);
CREATE INDEX IF NOT EXISTS oauth_codes_user ON oauth_codes (user_id);
-- Foreign keys the check found with no index led by them: a session or an OpenID client deleted
-- read the whole referencing table to cascade.
CREATE INDEX IF NOT EXISTS oauth_browser_sessions_session ON oauth_browser_sessions (session_id);
CREATE INDEX IF NOT EXISTS oauth_codes_client ON oauth_codes (client_id);
CREATE INDEX IF NOT EXISTS oauth_consents_client ON oauth_consents (client_id);
-- Erasure blanks the mail sent to an address, whatever its case.
CREATE INDEX IF NOT EXISTS outbox_recipient ON outbox (lower(recipient));
-- The console's daily activity (sign-ins by day, active accounts by the day's refresh tokens)
-- and the retention sweep of sessions' addresses read by creation time.
CREATE INDEX IF NOT EXISTS sessions_created ON sessions (created_at);
CREATE INDEX IF NOT EXISTS refresh_tokens_issued ON refresh_tokens (issued_at);
-- The operators' search by a prefix of the address or the handle reads a range of each in byte
-- order (the C collation, whatever the database's), and a provider's subject by itself.
CREATE INDEX IF NOT EXISTS users_email_prefix ON users (email_normalized COLLATE "C");
CREATE INDEX IF NOT EXISTS users_handle_prefix ON users (handle COLLATE "C");
CREATE INDEX IF NOT EXISTS identities_subject ON identities (subject);
-- The operators' lists filtered to what few accounts are (disabled, an address never confirmed,
-- anonymous or not), newest first, and the audit trail of one kind of event: each in order
-- through its own index instead of testing every account or row from the newest.
CREATE INDEX IF NOT EXISTS users_disabled ON users (created_at, id) WHERE disabled_at IS NOT NULL;
CREATE INDEX IF NOT EXISTS users_unverified ON users (created_at, id) WHERE email IS NOT NULL AND email_verified_at IS NULL;
CREATE INDEX IF NOT EXISTS users_anonymous ON users (is_anonymous, created_at, id);
CREATE INDEX IF NOT EXISTS audit_log_event ON audit_log (event, seq);
