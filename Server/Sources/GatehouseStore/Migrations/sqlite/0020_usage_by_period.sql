-- contract: rebuilds usage_records with the billing period in its key; a node whose newest migration is 19 still writes the old key (shipped before the expand/contract rule of issue 62).
-- A use is keyed by its period too (issue 40, finding 3): a key seen in an earlier period is a
-- new use in this one, never the replay of an old answer.
CREATE TABLE usage_records_by_period (
    user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    meter TEXT NOT NULL,
    idempotency_key TEXT NOT NULL,
    amount INTEGER NOT NULL,
    period_start INTEGER NOT NULL,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (user_id, meter, period_start, idempotency_key)
);
INSERT INTO usage_records_by_period (user_id, meter, idempotency_key, amount, period_start, created_at)
SELECT user_id, meter, idempotency_key, amount, period_start, created_at FROM usage_records;
DROP TABLE usage_records;
ALTER TABLE usage_records_by_period RENAME TO usage_records;
CREATE INDEX usage_records_period ON usage_records (period_start);
