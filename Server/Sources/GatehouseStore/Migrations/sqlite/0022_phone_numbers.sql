-- Phone numbers (issue 43): an account's number in E.164, unique across accounts like the
-- address (the unique key settles racing sign-ups), and when it was proved with a code.
ALTER TABLE users ADD COLUMN phone TEXT;
ALTER TABLE users ADD COLUMN phone_verified_at INTEGER;
CREATE UNIQUE INDEX users_phone ON users (phone);

-- Codes sent by SMS, as a keyed hash: to sign in with a number, or to prove one added to a
-- profile (user_id set). Each guess reserves an attempt by one conditional update.
CREATE TABLE phone_codes (
    id TEXT PRIMARY KEY,
    phone TEXT NOT NULL,
    purpose TEXT NOT NULL,
    user_id TEXT REFERENCES users (id) ON DELETE CASCADE,
    code_hash BLOB NOT NULL,
    attempts INTEGER NOT NULL,
    created_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL,
    used_at INTEGER
);

CREATE INDEX phone_codes_phone ON phone_codes (phone, purpose, created_at);
CREATE INDEX phone_codes_user ON phone_codes (user_id);
CREATE INDEX phone_codes_expiry ON phone_codes (expires_at);
