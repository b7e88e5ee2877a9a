-- One row per App Store subscription (original transaction id); user_id is NULL
-- until an account claims it.
CREATE TABLE subscriptions (
    original_transaction_id TEXT PRIMARY KEY,
    user_id TEXT REFERENCES users (id) ON DELETE CASCADE,
    product_id TEXT NOT NULL,
    environment TEXT NOT NULL,
    status TEXT NOT NULL,
    expires_at BIGINT,
    grace_expires_at BIGINT,
    will_renew BIGINT NOT NULL,
    introductory BIGINT NOT NULL,
    signed_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);

CREATE INDEX subscriptions_user ON subscriptions (user_id);

-- Notifications already applied, by notificationUUID (Apple retries).
CREATE TABLE app_store_notifications (notification_uuid TEXT PRIMARY KEY, type TEXT NOT NULL, received_at BIGINT NOT NULL);
