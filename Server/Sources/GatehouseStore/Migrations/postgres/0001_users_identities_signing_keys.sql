CREATE TABLE users (
    id TEXT PRIMARY KEY,
    email TEXT,
    email_normalized TEXT UNIQUE,
    email_verified_at BIGINT,
    is_anonymous BIGINT NOT NULL DEFAULT 0,
    display_name TEXT,
    handle TEXT UNIQUE,
    avatar_url TEXT,
    onboarding_complete BIGINT NOT NULL DEFAULT 0,
    password_hash TEXT,
    password_changed_at BIGINT,
    disabled_at BIGINT,
    disabled_reason TEXT,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);

CREATE INDEX users_created ON users (created_at, id);

CREATE TABLE identities (
    id TEXT PRIMARY KEY,
    user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    provider TEXT NOT NULL,
    subject TEXT NOT NULL,
    email TEXT,
    is_private_relay BIGINT NOT NULL DEFAULT 0,
    created_at BIGINT NOT NULL,
    UNIQUE (provider, subject)
);

CREATE INDEX identities_user ON identities (user_id);

CREATE TABLE signing_keys (
    kid TEXT PRIMARY KEY,
    algorithm TEXT NOT NULL,
    private_key BYTEA NOT NULL,
    encryption TEXT NOT NULL,
    public_jwk TEXT NOT NULL,
    status TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    retired_at BIGINT,
    publish_until BIGINT
);

CREATE UNIQUE INDEX signing_keys_one_active ON signing_keys (status) WHERE status = 'active';
