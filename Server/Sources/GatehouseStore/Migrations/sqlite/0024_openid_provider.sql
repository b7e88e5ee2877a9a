-- The OpenID provider (issue 45). A client's sessions are rows of `sessions` (client_id and the
-- scope granted), so refresh-token rotation, reuse detection and every revocation work on them
-- as on the app's own.
ALTER TABLE sessions ADD COLUMN client_id TEXT;
ALTER TABLE sessions ADD COLUMN scope TEXT;
ALTER TABLE sessions ADD COLUMN auth_time INTEGER;

CREATE INDEX sessions_client ON sessions (client_id, user_id) WHERE client_id IS NOT NULL;

-- Relying parties registered by operators. A confidential client's secret is kept as its SHA-256.
CREATE TABLE oauth_clients (
    client_id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    secret_hash BLOB,
    public INTEGER NOT NULL,
    first_party INTEGER NOT NULL,
    redirect_uris TEXT NOT NULL,
    post_logout_redirect_uris TEXT NOT NULL,
    scopes TEXT NOT NULL,
    audience TEXT,
    initiate_login_uri TEXT,
    rate_limit_per_minute INTEGER NOT NULL,
    created_at INTEGER NOT NULL
);

-- One-time codes (the code flow's and the app's hand-over), by hash: used once by one
-- conditional UPDATE; issued_session_id is what a second use revokes.
CREATE TABLE oauth_codes (
    code_hash BLOB PRIMARY KEY,
    kind TEXT NOT NULL,
    client_id TEXT NOT NULL REFERENCES oauth_clients (client_id) ON DELETE CASCADE,
    user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    session_id TEXT NOT NULL,
    redirect_uri TEXT,
    scope TEXT NOT NULL,
    nonce TEXT,
    code_challenge TEXT,
    created_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL,
    used_at INTEGER,
    issued_session_id TEXT
);

CREATE INDEX oauth_codes_expires ON oauth_codes (expires_at);

-- A person's consent to a client, until they withdraw it (the pair is the key).
CREATE TABLE oauth_consents (
    user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    client_id TEXT NOT NULL REFERENCES oauth_clients (client_id) ON DELETE CASCADE,
    scope TEXT NOT NULL,
    granted_at INTEGER NOT NULL,
    PRIMARY KEY (user_id, client_id)
);

-- A browser signed in at the provider: its cookie's SHA-256 and the session it stands for (a
-- revoked or swept session ends it).
CREATE TABLE oauth_browser_sessions (
    token_hash BLOB PRIMARY KEY,
    session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    created_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL
);
