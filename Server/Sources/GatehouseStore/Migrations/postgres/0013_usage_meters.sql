-- The uses an app's backend reported (POST /v1/usage/{meter}), one row per
-- idempotency key, and each period's running count.
CREATE TABLE usage_records (
    user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    meter TEXT NOT NULL,
    idempotency_key TEXT NOT NULL,
    amount BIGINT NOT NULL,
    period_start BIGINT NOT NULL,
    created_at BIGINT NOT NULL,
    PRIMARY KEY (user_id, meter, idempotency_key)
);

CREATE INDEX usage_records_period ON usage_records (period_start);

CREATE TABLE usage_meters (
    user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    meter TEXT NOT NULL,
    period_start BIGINT NOT NULL,
    used BIGINT NOT NULL,
    PRIMARY KEY (user_id, meter, period_start)
);

CREATE INDEX usage_meters_period ON usage_meters (period_start);
