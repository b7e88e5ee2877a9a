CREATE TABLE outbox (
    id TEXT PRIMARY KEY,
    created_at INTEGER NOT NULL,
    kind TEXT NOT NULL,
    recipient TEXT NOT NULL,
    subject TEXT NOT NULL,
    text_body TEXT,
    html_body TEXT,
    link_host TEXT,
    status TEXT NOT NULL,
    attempts INTEGER NOT NULL,
    next_attempt_at INTEGER NOT NULL,
    claimed_until INTEGER,
    last_error TEXT,
    sent_at INTEGER
);

CREATE INDEX outbox_due ON outbox (status, next_attempt_at);
CREATE INDEX outbox_created ON outbox (created_at);
