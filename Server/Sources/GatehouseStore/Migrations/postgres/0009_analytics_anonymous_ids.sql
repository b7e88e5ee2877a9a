-- Client analytics sent before any account exists carry a device-local id; it is
-- tied to the user once one signs in (decision 23).
ALTER TABLE events ADD COLUMN anonymous_id TEXT;
CREATE INDEX events_anonymous ON events (anonymous_id);
