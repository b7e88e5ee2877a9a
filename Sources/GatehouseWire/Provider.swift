/// How a person signs in: an identity's kind, a session's sign-in (`Session.provider`), the
/// `provider` of `user.created` and `user.upgraded`. Open so that providers can be added
/// without breaking stored rows.
public struct Provider: GatehouseValue {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    /// Email and password; also the identity a magic link signs in to.
    public static let email: Provider = "email"
    public static let apple: Provider = "apple"
    public static let google: Provider = "google"
    /// A magic link or its code: the `provider` of the events of an account it made or
    /// upgraded, and the SDK's last way in on a device. Its identity and session are `email`.
    public static let magicLink: Provider = "magic_link"
    public static let anonymous: Provider = "anonymous"
    /// A passkey (WebAuthn): the `provider` of its sessions and of the accounts it made. A
    /// passkey is not an identity row: the account's passkeys are listed on their own.
    public static let passkey: Provider = "passkey"
    /// A phone number proved by an SMS code: an identity (subject the E.164 number) and the
    /// `provider` of its sessions.
    public static let phone: Provider = "phone"

    /// The access token's `amr` method for a session opened this way, where the session says
    /// it exactly (an `email` session may be a password or a magic link, so it has none yet).
    public var authenticationMethod: String? {
        switch self {
        case .passkey, .apple, .google, .anonymous: rawValue
        case .phone: "sms"
        default: nil
        }
    }
}
