-- The retention sweep deletes events older than the preset's retention_days, oldest first,
-- a batch at a time by their creation time (issue 65). On a large PostgreSQL database, build it
-- first with CREATE INDEX CONCURRENTLY (docs/scaling.md).
CREATE INDEX IF NOT EXISTS events_created ON events (created_at);
