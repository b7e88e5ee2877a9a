-- How each session was signed in: the first factor's amr method, and the
-- second factor once one is verified (at sign-in or by a step-up).
ALTER TABLE sessions ADD COLUMN method TEXT;
ALTER TABLE sessions ADD COLUMN assurance TEXT NOT NULL DEFAULT 'aal1';
ALTER TABLE sessions ADD COLUMN second_factor TEXT;
ALTER TABLE sessions ADD COLUMN second_factor_at BIGINT;

-- Second factors (TOTP); the secret is sealed when GATEHOUSE_SECRET_KEY is set.
-- last_used_step only moves forward, so no code is accepted twice.
CREATE TABLE mfa_factors (
    id TEXT PRIMARY KEY,
    user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    type TEXT NOT NULL,
    name TEXT NOT NULL,
    secret BYTEA NOT NULL,
    encryption TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    confirmed_at BIGINT,
    last_used_step BIGINT,
    last_used_at BIGINT
);

CREATE INDEX mfa_factors_user ON mfa_factors (user_id);

-- Recovery codes, as keyed hashes; each is taken once (used_at).
CREATE TABLE mfa_recovery_codes (
    user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    code_hash BYTEA NOT NULL,
    created_at BIGINT NOT NULL,
    used_at BIGINT,
    PRIMARY KEY (user_id, code_hash)
);

-- Sign-ins waiting for their second factor, by the hash of the id the client
-- holds; attempts are reserved before each code is checked.
CREATE TABLE mfa_challenges (
    id_hash BYTEA PRIMARY KEY,
    user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    provider TEXT NOT NULL,
    method TEXT NOT NULL,
    event TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL,
    attempts BIGINT NOT NULL DEFAULT 0,
    consumed_at BIGINT
);

CREATE INDEX mfa_challenges_expiry ON mfa_challenges (expires_at);
CREATE INDEX mfa_challenges_user ON mfa_challenges (user_id);
