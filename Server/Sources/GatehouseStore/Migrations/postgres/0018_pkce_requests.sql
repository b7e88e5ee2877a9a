-- /auth/v1's PKCE flow: the code challenge a client sent with POST /otp or /recover, kept
-- until that address's link is followed (GET /auth/v1/verify), which takes it once.
CREATE TABLE pkce_requests (
    email_normalized TEXT NOT NULL,
    purpose TEXT NOT NULL,
    challenge TEXT NOT NULL,
    method TEXT NOT NULL,
    expires_at BIGINT NOT NULL,
    PRIMARY KEY (email_normalized, purpose)
);
