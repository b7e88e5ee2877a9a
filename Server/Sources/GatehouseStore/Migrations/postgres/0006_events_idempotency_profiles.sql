CREATE TABLE events (
    seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    type TEXT NOT NULL,
    user_id TEXT,
    data TEXT NOT NULL,
    created_at BIGINT NOT NULL
);

CREATE INDEX events_user ON events (user_id, seq);

CREATE TABLE idempotency_keys (
    scope TEXT NOT NULL,
    key_hash BYTEA NOT NULL,
    user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    created_at BIGINT NOT NULL,
    PRIMARY KEY (scope, key_hash)
);

CREATE INDEX idempotency_keys_created ON idempotency_keys (created_at);

-- The names last offered to an anonymous user (JSON array).
ALTER TABLE users ADD COLUMN name_suggestions TEXT;

-- An operator's plan override (read by the entitlement engine).
ALTER TABLE users ADD COLUMN plan_override TEXT;
