-- The Stripe customer made for an account: one per account (the key) and one account per
-- customer (unique), so parallel checkouts keep the first one stored.
CREATE TABLE stripe_customers (
    user_id TEXT PRIMARY KEY REFERENCES users (id) ON DELETE CASCADE,
    customer_id TEXT NOT NULL UNIQUE,
    created_at BIGINT NOT NULL
);

-- One row per Stripe subscription: Stripe's state as last read from its API (read_at, in
-- milliseconds, orders the reads). user_id is NULL when no account is known for the customer.
CREATE TABLE stripe_subscriptions (
    subscription_id TEXT PRIMARY KEY,
    customer_id TEXT NOT NULL,
    user_id TEXT REFERENCES users (id) ON DELETE CASCADE,
    price_id TEXT NOT NULL,
    status TEXT NOT NULL,
    current_period_end BIGINT,
    cancel_at_period_end BIGINT NOT NULL,
    trial_end BIGINT,
    read_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);

CREATE INDEX stripe_subscriptions_user ON stripe_subscriptions (user_id);

CREATE INDEX stripe_subscriptions_customer ON stripe_subscriptions (customer_id);

-- Stripe events applied, by id (Stripe redelivers), with what became of each.
CREATE TABLE stripe_events (event_id TEXT PRIMARY KEY, type TEXT NOT NULL, outcome TEXT NOT NULL, received_at BIGINT NOT NULL);

-- Operators' promotional grants: the paid plan (at a tier) from starts_at until ends_at.
CREATE TABLE plan_grants (
    id TEXT PRIMARY KEY,
    user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    plan TEXT NOT NULL,
    tier TEXT,
    starts_at BIGINT NOT NULL,
    ends_at BIGINT NOT NULL,
    reason TEXT NOT NULL,
    created_by TEXT NOT NULL,
    revoked_at BIGINT
);

CREATE INDEX plan_grants_user ON plan_grants (user_id);
