ALTER TABLE users ADD COLUMN trial_started_at BIGINT;

CREATE TABLE credit_ledger (
    id TEXT PRIMARY KEY,
    user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    credit TEXT NOT NULL,
    amount BIGINT NOT NULL,
    action TEXT NOT NULL,
    subject TEXT,
    idempotency_key TEXT NOT NULL,
    period_start BIGINT NOT NULL,
    created_at BIGINT NOT NULL,
    UNIQUE (user_id, idempotency_key)
);

CREATE INDEX credit_ledger_period ON credit_ledger (user_id, credit, period_start);
