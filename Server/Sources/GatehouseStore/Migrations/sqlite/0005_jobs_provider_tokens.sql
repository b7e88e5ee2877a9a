CREATE TABLE jobs (
    id TEXT PRIMARY KEY,
    kind TEXT NOT NULL,
    payload BLOB NOT NULL,
    encryption TEXT NOT NULL,
    status TEXT NOT NULL,
    attempts INTEGER NOT NULL,
    next_attempt_at INTEGER NOT NULL,
    claimed_until INTEGER,
    last_error TEXT,
    created_at INTEGER NOT NULL
);

CREATE INDEX jobs_due ON jobs (status, next_attempt_at);

-- A provider's own token for the identity (Apple's refresh token), sealed.
ALTER TABLE identities ADD COLUMN provider_token BLOB;
ALTER TABLE identities ADD COLUMN provider_token_encryption TEXT;
