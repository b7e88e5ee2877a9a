-- Each node keeps a short-lived copy of the sessions and accounts that access tokens
-- name (SessionCache). Every change to either is announced on the 'gatehouse_sessions'
-- channel when its transaction commits, so each node drops its copy: 's:' and the
-- session's id, or 'u:' and the account's id. A session's last_active_at moving forward
-- (a refresh) is not announced: a copy that is older in that one column is only stricter.
CREATE FUNCTION gatehouse_announce_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    -- Nested: a users row has no last_active_at for the inner test to read.
    IF TG_TABLE_NAME = 'sessions' AND TG_OP = 'UPDATE' THEN
        IF NEW.last_active_at >= OLD.last_active_at
            AND (to_jsonb(NEW) - 'last_active_at') = (to_jsonb(OLD) - 'last_active_at') THEN
            RETURN NULL;
        END IF;
    END IF;
    PERFORM pg_notify('gatehouse_sessions', CASE TG_TABLE_NAME WHEN 'sessions' THEN 's:' ELSE 'u:' END || OLD.id);
    RETURN NULL;
END
$$;
CREATE TRIGGER sessions_announce_change AFTER UPDATE OR DELETE ON sessions
    FOR EACH ROW EXECUTE FUNCTION gatehouse_announce_change();
CREATE TRIGGER users_announce_change AFTER UPDATE OR DELETE ON users
    FOR EACH ROW EXECUTE FUNCTION gatehouse_announce_change();
