CREATE TABLE jobs (
    id TEXT PRIMARY KEY,
    kind TEXT NOT NULL,
    payload BYTEA NOT NULL,
    encryption TEXT NOT NULL,
    status TEXT NOT NULL,
    attempts BIGINT NOT NULL,
    next_attempt_at BIGINT NOT NULL,
    claimed_until BIGINT,
    last_error TEXT,
    created_at BIGINT NOT NULL
);

CREATE INDEX jobs_due ON jobs (status, next_attempt_at);

-- A provider's own token for the identity (Apple's refresh token), sealed.
ALTER TABLE identities ADD COLUMN provider_token BYTEA;
ALTER TABLE identities ADD COLUMN provider_token_encryption TEXT;
