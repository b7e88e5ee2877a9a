-- Issue 58: an account a phone sign-up made stops holding its number when the number is not
-- proved within a day (AccountCleanup's unproved_phone_sign_up rule). The hourly sweep finds
-- them by this partial index instead of reading every account.
CREATE INDEX users_unproved_phone ON users (created_at) WHERE phone IS NOT NULL AND phone_verified_at IS NULL;
