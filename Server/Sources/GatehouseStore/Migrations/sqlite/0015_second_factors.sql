-- How each session was signed in: the first factor's amr method, and the
-- second factor once one is verified (at sign-in or by a step-up).
ALTER TABLE sessions ADD COLUMN method TEXT;
ALTER TABLE sessions ADD COLUMN assurance TEXT NOT NULL DEFAULT 'aal1';
ALTER TABLE sessions ADD COLUMN second_factor TEXT;
ALTER TABLE sessions ADD COLUMN second_factor_at INTEGER;

-- Second factors (TOTP); the secret is sealed when GATEHOUSE_SECRET_KEY is set.
-- last_used_step only moves forward, so no code is accepted twice.
CREATE TABLE mfa_factors (
    id TEXT PRIMARY KEY,
    user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    type TEXT NOT NULL,
    name TEXT NOT NULL,
    secret BLOB NOT NULL,
    encryption TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    confirmed_at INTEGER,
    last_used_step INTEGER,
    last_used_at INTEGER
);

CREATE INDEX mfa_factors_user ON mfa_factors (user_id);

-- Recovery codes, as keyed hashes; each is taken once (used_at).
CREATE TABLE mfa_recovery_codes (
    user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    code_hash BLOB NOT NULL,
    created_at INTEGER NOT NULL,
    used_at INTEGER,
    PRIMARY KEY (user_id, code_hash)
);

-- Sign-ins waiting for their second factor, by the hash of the id the client
-- holds; attempts are reserved before each code is checked.
CREATE TABLE mfa_challenges (
    id_hash BLOB PRIMARY KEY,
    user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    provider TEXT NOT NULL,
    method TEXT NOT NULL,
    event TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0,
    consumed_at INTEGER
);

CREATE INDEX mfa_challenges_expiry ON mfa_challenges (expires_at);
CREATE INDEX mfa_challenges_user ON mfa_challenges (user_id);
