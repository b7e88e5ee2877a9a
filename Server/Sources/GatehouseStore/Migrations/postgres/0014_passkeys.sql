-- Passkeys (WebAuthn credentials), one row each; a credential id belongs to
-- one account only.
CREATE TABLE passkeys (
    id TEXT PRIMARY KEY,
    user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    credential_id BYTEA NOT NULL UNIQUE,
    public_key BYTEA NOT NULL,
    sign_count BIGINT NOT NULL,
    backup_eligible BIGINT NOT NULL,
    backed_up BIGINT NOT NULL,
    transports TEXT NOT NULL,
    aaguid BYTEA NOT NULL,
    name TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    last_used_at BIGINT
);

CREATE INDEX passkeys_user ON passkeys (user_id);

-- Open ceremonies: each challenge is deleted by the one verify that uses it.
CREATE TABLE passkey_challenges (
    id TEXT PRIMARY KEY,
    ceremony TEXT NOT NULL,
    challenge BYTEA NOT NULL,
    user_id TEXT,
    email TEXT,
    session_id TEXT,
    created_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL
);

CREATE INDEX passkey_challenges_expiry ON passkey_challenges (expires_at);
