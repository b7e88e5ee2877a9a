import Foundation

/// Every door a session is opened through (issue 60). `SessionIssuer` is the one part that
/// opens sessions; it records the door on the session row, and `SessionDoorTests` walks
/// `allCases` through the running server, so a door that opened sessions beside the issuer,
/// or a new door nobody walked, fails.
public enum SessionDoor: String, CaseIterable, Sendable {
    /// A new account's email and password (`/v1/auth/signup`, `/auth/v1/signup`).
    case signUp = "sign_up"
    /// An email and password (`/v1/auth/login`, `/auth/v1/token?grant_type=password`, the
    /// provider's sign-in page).
    case password
    /// A magic link or its code.
    case magicLink = "magic_link"
    /// The link that verifies an address, redeemed at `/auth/v1/verify` (`signup`,
    /// `email_change`).
    case emailVerification = "email_verification"
    /// A password reset's link, redeemed at `/auth/v1/verify` (`recovery`).
    case passwordReset = "password_reset"
    /// A Sign in with Apple or Google id_token.
    case provider
    /// A passkey's assertion, or a new account's passkey.
    case passkey
    /// An anonymous start.
    case anonymous
    /// A code sent by SMS.
    case phone
    /// A second factor that completed a challenge one of the doors above opened.
    case secondFactor = "second_factor"
    /// The OpenID provider's code exchange (`/oauth/token`): a client's session.
    case oauthCode = "oauth_code"
    /// The app's hand-over, confirmed in a browser: a web session for the link's client.
    case handover
}
