CREATE TABLE sessions (
    id TEXT PRIMARY KEY,
    user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    provider TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    last_active_at BIGINT NOT NULL,
    expires_at BIGINT,
    revoked_at BIGINT,
    revoked_reason TEXT,
    user_agent TEXT,
    ip_address TEXT
);

CREATE INDEX sessions_user ON sessions (user_id, created_at);

CREATE TABLE refresh_tokens (
    token_hash BYTEA PRIMARY KEY,
    session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    issued_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL,
    rotated_at BIGINT
);

CREATE INDEX refresh_tokens_session ON refresh_tokens (session_id);

CREATE TABLE throttles (
    key TEXT PRIMARY KEY,
    failures BIGINT NOT NULL,
    locked_until BIGINT,
    updated_at BIGINT NOT NULL
);

CREATE TABLE rate_limits (
    key TEXT NOT NULL,
    window_start BIGINT NOT NULL,
    count BIGINT NOT NULL,
    PRIMARY KEY (key, window_start)
);

CREATE TABLE audit_log (
    seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    created_at BIGINT NOT NULL,
    event TEXT NOT NULL,
    outcome TEXT NOT NULL,
    user_id TEXT,
    session_id TEXT,
    ip_address TEXT,
    user_agent TEXT,
    details TEXT
);

CREATE INDEX audit_log_user ON audit_log (user_id, seq);

CREATE TABLE server_secrets (
    name TEXT PRIMARY KEY,
    value BYTEA NOT NULL,
    encryption TEXT NOT NULL,
    created_at BIGINT NOT NULL
);
