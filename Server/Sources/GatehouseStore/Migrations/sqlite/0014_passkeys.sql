-- Passkeys (WebAuthn credentials), one row each; a credential id belongs to
-- one account only.
CREATE TABLE passkeys (
    id TEXT PRIMARY KEY,
    user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    credential_id BLOB NOT NULL UNIQUE,
    public_key BLOB NOT NULL,
    sign_count INTEGER NOT NULL,
    backup_eligible INTEGER NOT NULL,
    backed_up INTEGER NOT NULL,
    transports TEXT NOT NULL,
    aaguid BLOB NOT NULL,
    name TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    last_used_at INTEGER
);

CREATE INDEX passkeys_user ON passkeys (user_id);

-- Open ceremonies: each challenge is deleted by the one verify that uses it.
CREATE TABLE passkey_challenges (
    id TEXT PRIMARY KEY,
    ceremony TEXT NOT NULL,
    challenge BLOB NOT NULL,
    user_id TEXT,
    email TEXT,
    session_id TEXT,
    created_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL
);

CREATE INDEX passkey_challenges_expiry ON passkey_challenges (expires_at);
