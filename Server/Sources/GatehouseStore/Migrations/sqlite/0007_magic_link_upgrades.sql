-- The anonymous account a magic link upgrades, when it was asked for while signed in.
ALTER TABLE email_tokens ADD COLUMN upgrade_user_id TEXT;
