CREATE TABLE outbox (
    id TEXT PRIMARY KEY,
    created_at BIGINT NOT NULL,
    kind TEXT NOT NULL,
    recipient TEXT NOT NULL,
    subject TEXT NOT NULL,
    text_body TEXT,
    html_body TEXT,
    link_host TEXT,
    status TEXT NOT NULL,
    attempts BIGINT NOT NULL,
    next_attempt_at BIGINT NOT NULL,
    claimed_until BIGINT,
    last_error TEXT,
    sent_at BIGINT
);

CREATE INDEX outbox_due ON outbox (status, next_attempt_at);
CREATE INDEX outbox_created ON outbox (created_at);
