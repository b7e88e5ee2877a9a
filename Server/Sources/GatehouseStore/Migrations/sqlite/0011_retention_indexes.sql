-- The retention sweep deletes by age (decision 11).
CREATE INDEX audit_log_created ON audit_log (created_at);
CREATE INDEX sessions_last_active ON sessions (last_active_at);
CREATE INDEX rate_limits_window ON rate_limits (window_start);
