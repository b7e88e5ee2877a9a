-- The admin console's sessions, by the SHA-256 of the cookie's nonce (issue 40, finding 7): a
-- signed cookie is good only while its row is here, so signing out ends it on every node, also
-- for a copy of the cookie.
CREATE TABLE console_sessions (
    nonce_hash BYTEA PRIMARY KEY,
    expires_at BIGINT NOT NULL
);
