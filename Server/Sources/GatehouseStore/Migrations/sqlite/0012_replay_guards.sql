-- The session an idempotent sign-up or anonymous start opened: a replay is
-- honoured only while it is live.
ALTER TABLE idempotency_keys ADD COLUMN session_id TEXT;
CREATE INDEX idempotency_keys_user ON idempotency_keys (user_id);

-- Single-use ids of signed messages from outside (Apple's events by jti).
CREATE TABLE used_message_ids (
    issuer TEXT NOT NULL,
    message_id TEXT NOT NULL,
    keep_until INTEGER NOT NULL,
    PRIMARY KEY (issuer, message_id)
);

CREATE INDEX used_message_ids_keep ON used_message_ids (keep_until);
