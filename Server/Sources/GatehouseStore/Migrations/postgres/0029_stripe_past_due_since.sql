-- Issue 59, finding 3: a `past_due` subscription gave the paid plan for the whole unpaid period,
-- and again each cycle Stripe kept it past due. Billing grace now runs from when it first went
-- past due, for the preset's `stripe.billing_grace_days`: `past_due_since` is kept across reads
-- while it stays past due, and cleared once it is paid. A row already past due counts from its
-- last update.
ALTER TABLE stripe_subscriptions ADD COLUMN past_due_since BIGINT;
UPDATE stripe_subscriptions SET past_due_since = updated_at WHERE status = 'past_due';
