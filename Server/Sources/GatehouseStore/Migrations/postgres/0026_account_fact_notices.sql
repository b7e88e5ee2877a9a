-- Each node also keeps what the entitlement snapshot reads of an account (SessionCache's
-- AccountFacts: identities, App Store and Stripe subscriptions, grants, this period's
-- credits). Every change to those rows is announced on 'gatehouse_sessions' when its
-- transaction commits, as 'f:' and the owning account's id (the old owner and the new
-- one when a row moves), so every node drops that account's facts (its sessions stay).
CREATE FUNCTION gatehouse_announce_account_fact() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP IN ('UPDATE', 'DELETE') AND OLD.user_id IS NOT NULL THEN
        PERFORM pg_notify('gatehouse_sessions', 'f:' || OLD.user_id);
    END IF;
    IF TG_OP IN ('INSERT', 'UPDATE') AND NEW.user_id IS NOT NULL
        AND (TG_OP = 'INSERT' OR NEW.user_id IS DISTINCT FROM OLD.user_id) THEN
        PERFORM pg_notify('gatehouse_sessions', 'f:' || NEW.user_id);
    END IF;
    RETURN NULL;
END
$$;
CREATE TRIGGER identities_announce_change AFTER INSERT OR UPDATE OR DELETE ON identities
    FOR EACH ROW EXECUTE FUNCTION gatehouse_announce_account_fact();
CREATE TRIGGER subscriptions_announce_change AFTER INSERT OR UPDATE OR DELETE ON subscriptions
    FOR EACH ROW EXECUTE FUNCTION gatehouse_announce_account_fact();
CREATE TRIGGER stripe_subscriptions_announce_change AFTER INSERT OR UPDATE OR DELETE ON stripe_subscriptions
    FOR EACH ROW EXECUTE FUNCTION gatehouse_announce_account_fact();
CREATE TRIGGER plan_grants_announce_change AFTER INSERT OR UPDATE OR DELETE ON plan_grants
    FOR EACH ROW EXECUTE FUNCTION gatehouse_announce_account_fact();
CREATE TRIGGER credit_ledger_announce_change AFTER INSERT OR UPDATE OR DELETE ON credit_ledger
    FOR EACH ROW EXECUTE FUNCTION gatehouse_announce_account_fact();
