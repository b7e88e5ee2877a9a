-- contract: rebuilds stripe_customers with one row per customer; a node whose newest migration is 27 still writes one row per account (shipped before the expand/contract rule of issue 62).
-- Issue 59, finding 1: an account merged into another kept its Stripe subscription but lost its
-- customer (one row per account), so the portal could not reach the subscription and deleting
-- the account did not cancel it. Now one row per customer: `own` = 1 for the customer the
-- account's checkouts made (at most one per account, the unique partial index), 0 for one that
-- came with a merged account. Every row is kept.
CREATE TABLE stripe_customers_by_customer (
    customer_id TEXT PRIMARY KEY,
    user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    own INTEGER NOT NULL,
    created_at BIGINT NOT NULL
);
INSERT INTO stripe_customers_by_customer (customer_id, user_id, own, created_at)
    SELECT customer_id, user_id, 1, created_at FROM stripe_customers;
DROP TABLE stripe_customers;
ALTER TABLE stripe_customers_by_customer RENAME TO stripe_customers;
CREATE UNIQUE INDEX stripe_customers_own ON stripe_customers (user_id) WHERE own = 1;
CREATE INDEX stripe_customers_user ON stripe_customers (user_id);
