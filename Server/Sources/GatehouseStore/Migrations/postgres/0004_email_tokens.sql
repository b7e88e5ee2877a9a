CREATE TABLE email_tokens (
    token_hash BYTEA PRIMARY KEY,
    purpose TEXT NOT NULL,
    user_id TEXT REFERENCES users (id) ON DELETE CASCADE,
    email TEXT NOT NULL,
    email_normalized TEXT NOT NULL,
    code_hash BYTEA,
    code_attempts BIGINT NOT NULL,
    redirect_to TEXT,
    password_stamp BIGINT,
    created_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL,
    used_at BIGINT
);

CREATE INDEX email_tokens_user ON email_tokens (user_id, purpose, created_at);
CREATE INDEX email_tokens_email ON email_tokens (email_normalized, purpose, created_at);
CREATE INDEX email_tokens_expiry ON email_tokens (expires_at);

-- A queued request (forgot-password, magic link) is composed by the mail worker.
ALTER TABLE outbox ADD COLUMN payload TEXT;
