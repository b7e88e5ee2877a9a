CREATE TABLE sessions (
    id TEXT PRIMARY KEY,
    user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    provider TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    last_active_at INTEGER NOT NULL,
    expires_at INTEGER,
    revoked_at INTEGER,
    revoked_reason TEXT,
    user_agent TEXT,
    ip_address TEXT
);

CREATE INDEX sessions_user ON sessions (user_id, created_at);

CREATE TABLE refresh_tokens (
    token_hash BLOB PRIMARY KEY,
    session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    issued_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL,
    rotated_at INTEGER
);

CREATE INDEX refresh_tokens_session ON refresh_tokens (session_id);

CREATE TABLE throttles (
    key TEXT PRIMARY KEY,
    failures INTEGER NOT NULL,
    locked_until INTEGER,
    updated_at INTEGER NOT NULL
);

CREATE TABLE rate_limits (
    key TEXT NOT NULL,
    window_start INTEGER NOT NULL,
    count INTEGER NOT NULL,
    PRIMARY KEY (key, window_start)
);

CREATE TABLE audit_log (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL UNIQUE,
    created_at INTEGER NOT NULL,
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
    value BLOB NOT NULL,
    encryption TEXT NOT NULL,
    created_at INTEGER NOT NULL
);
