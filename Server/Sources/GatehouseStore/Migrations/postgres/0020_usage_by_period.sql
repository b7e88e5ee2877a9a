-- contract: rebuilds usage_records with the billing period in its key; a node whose newest migration is 19 still writes the old key (shipped before the expand/contract rule of issue 62).
-- A use is keyed by its period too (issue 40, finding 3): a key seen in an earlier period is a
-- new use in this one, never the replay of an old answer.
ALTER TABLE usage_records DROP CONSTRAINT usage_records_pkey;
ALTER TABLE usage_records ADD PRIMARY KEY (user_id, meter, period_start, idempotency_key);
