-- contract: drops app_store_notifications and stripe_events, which a node whose newest migration is 29 still reads and writes (shipped before the expand/contract rule of issue 62).
-- Issue 59: one ledger for every source of a paid right.
--
-- "Applied once" was kept three ways (Apple's notificationUUID, Stripe's event ids, and Google
-- Play's Pub/Sub messageId to come): now one table keyed by the source and the source's own id
-- of the delivery, written in the transaction that applies it. The two old tables' rows move.
CREATE TABLE ledger_events (
    source TEXT NOT NULL,
    event_id TEXT NOT NULL,
    type TEXT NOT NULL,
    outcome TEXT NOT NULL,
    received_at BIGINT NOT NULL,
    PRIMARY KEY (source, event_id)
);
INSERT INTO ledger_events (source, event_id, type, outcome, received_at)
    SELECT 'app_store', notification_uuid, type, 'applied', received_at FROM app_store_notifications;
INSERT INTO ledger_events (source, event_id, type, outcome, received_at)
    SELECT 'stripe', event_id, type, outcome, received_at FROM stripe_events;
DROP TABLE app_store_notifications;
DROP TABLE stripe_events;
CREATE INDEX ledger_events_received ON ledger_events (received_at);

-- Google Play subscription purchases, one row per purchase token: Google's state as last read
-- from purchases.subscriptionsv2 (read_at, in milliseconds, orders the reads). user_id is NULL
-- until an account claims the token; once set it is never replaced (the key decides between
-- accounts claiming one token together). superseded_by names the newer token whose
-- linkedPurchaseToken named this one: only the newest token of a chain gives the right.
CREATE TABLE google_play_purchases (
    purchase_token TEXT PRIMARY KEY,
    user_id TEXT REFERENCES users (id) ON DELETE CASCADE,
    product_id TEXT NOT NULL,
    state TEXT NOT NULL,
    expires_at BIGINT,
    linked_purchase_token TEXT,
    obfuscated_account_id TEXT,
    acknowledged BIGINT NOT NULL,
    test_purchase BIGINT NOT NULL,
    superseded_by TEXT,
    voided_at BIGINT,
    read_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);
CREATE INDEX google_play_purchases_user ON google_play_purchases (user_id);
CREATE INDEX google_play_purchases_linked ON google_play_purchases (linked_purchase_token);
