CREATE TABLE users (
    id TEXT PRIMARY KEY,
    email TEXT,
    email_normalized TEXT UNIQUE,
    email_verified_at INTEGER,
    is_anonymous INTEGER NOT NULL DEFAULT 0,
    display_name TEXT,
    handle TEXT UNIQUE,
    avatar_url TEXT,
    onboarding_complete INTEGER NOT NULL DEFAULT 0,
    password_hash TEXT,
    password_changed_at INTEGER,
    disabled_at INTEGER,
    disabled_reason TEXT,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
);

CREATE INDEX users_created ON users (created_at, id);

CREATE TABLE identities (
    id TEXT PRIMARY KEY,
    user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    provider TEXT NOT NULL,
    subject TEXT NOT NULL,
    email TEXT,
    is_private_relay INTEGER NOT NULL DEFAULT 0,
    created_at INTEGER NOT NULL,
    UNIQUE (provider, subject)
);

CREATE INDEX identities_user ON identities (user_id);

CREATE TABLE signing_keys (
    kid TEXT PRIMARY KEY,
    algorithm TEXT NOT NULL,
    private_key BLOB NOT NULL,
    encryption TEXT NOT NULL,
    public_jwk TEXT NOT NULL,
    status TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    retired_at INTEGER,
    publish_until INTEGER
);

CREATE UNIQUE INDEX signing_keys_one_active ON signing_keys (status) WHERE status = 'active';
