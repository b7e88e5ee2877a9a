import Foundation
import GatehouseCore
import GatehouseWire

// The bodies of `/auth/v1` in Supabase Auth's (GoTrue's) own shape, so that supabase-swift,
// supabase-js and supabase-py read them unchanged. Built from Gatehouse's one user model; the
// differences in what they carry are listed in docs/supabase-compat.md.

/// GoTrue's user object.
struct GoTrueUser: Encodable, Sendable {
    var id: String
    var aud: String
    var role: String
    var email: String
    /// GoTrue's form: the E.164 digits without `+`, or "".
    var phone: String
    var phoneConfirmedAt: String?
    var emailConfirmedAt: String?
    var confirmedAt: String?
    var lastSignInAt: String?
    var appMetadata: [String: JSONValue]
    var userMetadata: [String: JSONValue]
    var identities: [GoTrueIdentity]
    var createdAt: String
    var updatedAt: String
    var bannedUntil: String?
    var isAnonymous: Bool
    /// The account's second factors; absent when it has none, as in GoTrue.
    var factors: [GoTrueFactor]?
    /// In the answer to an invitation only (Gatehouse keeps no invitation time).
    var invitedAt: String?
    /// In `generate_link`'s answer for an email change only: the address its link moves to.
    var newEmail: String?

    enum CodingKeys: String, CodingKey {
        case id, aud, role, email, phone, identities
        case factors
        case emailConfirmedAt = "email_confirmed_at", confirmedAt = "confirmed_at", lastSignInAt = "last_sign_in_at"
        case phoneConfirmedAt = "phone_confirmed_at"
        case appMetadata = "app_metadata", userMetadata = "user_metadata", createdAt = "created_at", updatedAt = "updated_at"
        case bannedUntil = "banned_until", isAnonymous = "is_anonymous", invitedAt = "invited_at", newEmail = "new_email"
    }

    /// The audience and role GoTrue gives every signed-in user.
    static let audience = "authenticated"

    /// A number in GoTrue's form: E.164 without `+`, or "" for none.
    static func phone(_ e164: String?) -> String {
        e164.map { String($0.drop { $0 == "+" }) } ?? ""
    }

    init(_ user: User, identities: [Identity], lastSignInAt: Date?) {
        id = user.id.description
        aud = Self.audience
        role = Self.audience
        email = user.email ?? ""
        phone = GoTrueUser.phone(user.phone)
        phoneConfirmedAt = user.phoneVerifiedAt.map(GoTrueTime.format)
        emailConfirmedAt = user.emailVerifiedAt.map(GoTrueTime.format)
        // GoTrue's `confirmed_at`: the first of the address's and the number's confirmations.
        confirmedAt = [user.emailVerifiedAt, user.phoneVerifiedAt].compactMap { $0 }.min().map(GoTrueTime.format)
        self.lastSignInAt = lastSignInAt.map(GoTrueTime.format)
        let providers = identities.map { GoTrueIdentity.providerName($0.provider) }
        // What operators set, with the ways in (which the server keeps) over it.
        appMetadata = user.appMetadata.merging([
            "provider": .string(providers.first ?? (user.isAnonymous ? "anonymous" : "email")),
            "providers": .array(Self.unique(providers).map(JSONValue.string)),
        ]) { _, derived in derived }
        userMetadata = GoTrueMetadata.userMetadata(of: user)
        self.identities = identities.filter { $0.provider != .anonymous }.map { GoTrueIdentity($0, of: user) }
        createdAt = GoTrueTime.format(user.createdAt)
        updatedAt = GoTrueTime.format(user.updatedAt)
        // GoTrue's way of saying "disabled": banned until far in the future.
        bannedUntil = user.disabledAt.map { _ in GoTrueTime.format(GoTrueTime.bannedForever) }
        isAnonymous = user.isAnonymous
    }

    private static func unique(_ names: [String]) -> [String] {
        var seen = Set<String>()
        return names.filter { seen.insert($0).inserted }
    }
}

/// A second factor as GoTrue lists it on the user (`factors`).
struct GoTrueFactor: Encodable, Sendable {
    var id: String
    var friendlyName: String
    var factorType: String
    var status: String
    var createdAt: String
    var updatedAt: String

    enum CodingKeys: String, CodingKey {
        case id, status
        case friendlyName = "friendly_name", factorType = "factor_type", createdAt = "created_at", updatedAt = "updated_at"
    }

    init(_ factor: MFAFactor) {
        id = factor.id.uuidString.lowercased()
        friendlyName = factor.name
        factorType = factor.type
        status = factor.isConfirmed ? "verified" : "unverified"
        createdAt = GoTrueTime.format(factor.createdAt)
        updatedAt = GoTrueTime.format(factor.lastUsedAt ?? factor.confirmedAt ?? factor.createdAt)
    }
}

/// `POST /factors`'s answer: the new factor with what an authenticator app needs.
struct GoTrueEnrollment: Encodable, Sendable {
    var id: String
    var type: String
    var friendlyName: String
    var totp: TOTP

    struct TOTP: Encodable, Sendable {
        /// The QR code as GoTrue gives it: the SVG document (clients make it a data URL).
        var qrCode: String
        var secret: String
        var uri: String
        enum CodingKeys: String, CodingKey {
            case secret, uri
            case qrCode = "qr_code"
        }
    }

    enum CodingKeys: String, CodingKey {
        case id, type, totp
        case friendlyName = "friendly_name"
    }

    init(_ enrollment: MFAEnrollment) {
        id = enrollment.id
        type = enrollment.type
        friendlyName = enrollment.name
        totp = TOTP(qrCode: enrollment.totp.qrSVG, secret: enrollment.totp.secret, uri: enrollment.totp.uri)
    }
}

/// `POST /factors/{id}/challenge`'s answer.
struct GoTrueChallenge: Encodable, Sendable {
    var id: String
    var type: String
    var expiresAt: Int64
    enum CodingKeys: String, CodingKey {
        case id, type
        case expiresAt = "expires_at"
    }
}

/// One of a user's identities, as GoTrue lists them (`id` is the provider's subject and
/// `identity_id` the row's own id: GoTrue's names, kept for its clients).
struct GoTrueIdentity: Encodable, Sendable {
    var identityID: String
    var id: String
    var userID: String
    var provider: String
    var identityData: [String: JSONValue]
    var email: String?
    var createdAt: String
    var updatedAt: String
    var lastSignInAt: String?

    enum CodingKeys: String, CodingKey {
        case id, provider, email
        case identityID = "identity_id", userID = "user_id", identityData = "identity_data", createdAt = "created_at"
        case updatedAt = "updated_at", lastSignInAt = "last_sign_in_at"
    }

    init(_ identity: Identity, of user: User) {
        identityID = identity.id.uuidString.lowercased()
        id = identity.subject
        userID = identity.userID.description
        provider = Self.providerName(identity.provider)
        var data: [String: JSONValue] = ["sub": .string(identity.subject)]
        if let email = identity.email { data["email"] = .string(email) }
        if identity.provider == .phone {
            data["phone"] = .string(GoTrueUser.phone(identity.subject))
            data["phone_verified"] = .bool(true)
        }
        // The address's own state for the email identity (proved or not yet); a provider's
        // address came with its token.
        data["email_verified"] = .bool(identity.provider == .email ? user.emailVerified : identity.email != nil)
        identityData = data
        email = identity.email
        createdAt = GoTrueTime.format(identity.createdAt)
        updatedAt = createdAt
        lastSignInAt = nil
    }

    /// GoTrue's provider names: Gatehouse's, except that an address proved by a link is still
    /// the `email` provider.
    static func providerName(_ provider: Provider) -> String {
        provider == .magicLink ? "email" : provider.rawValue
    }
}

/// A session in GoTrue's shape: the tokens at the top level, with the user beside them.
struct GoTrueSession: Encodable, Sendable {
    var accessToken: String
    var tokenType: String
    var expiresIn: Int
    var expiresAt: Int64
    var refreshToken: String
    var user: GoTrueUser

    enum CodingKeys: String, CodingKey {
        case user
        case accessToken = "access_token", tokenType = "token_type", expiresIn = "expires_in", expiresAt = "expires_at"
        case refreshToken = "refresh_token"
    }

    init(_ session: SessionPayload, user: GoTrueUser) {
        accessToken = session.accessToken
        tokenType = "bearer"
        expiresIn = session.expiresIn
        expiresAt = session.expiresAt
        refreshToken = session.refreshToken
        self.user = user
    }
}

/// `GET /auth/v1/admin/users`: one page, with GoTrue's `aud` beside it.
struct GoTrueUserList: Encodable, Sendable {
    var users: [GoTrueUser]
    var aud: String

    /// GoTrue's `Link` header for page `page` of `total` items: the next page while there is
    /// one, and always the last (0 when there are none). `page` is the first query parameter,
    /// where supabase-swift reads it.
    static func links(path: String, page: Int, perPage: Int, total: Int) -> String {
        func link(_ number: Int, _ relation: String) -> String { "<\(path)?page=\(number)&per_page=\(perPage)>; rel=\"\(relation)\"" }
        var links: [String] = []
        if page * perPage < total { links.append(link(page + 1, "next")) }
        links.append(link((total + perPage - 1) / perPage, "last"))
        return links.joined(separator: ", ")
    }
}

/// `GET /auth/v1/settings`: which ways in this server offers.
struct GoTrueSettings: Encodable, Sendable {
    var external: [String: Bool]
    var disableSignup: Bool
    var mailerAutoconfirm: Bool
    var phoneAutoconfirm: Bool
    var smsProvider: String
    var samlEnabled: Bool
    var passkeysEnabled: Bool

    enum CodingKeys: String, CodingKey {
        case external
        case disableSignup = "disable_signup", mailerAutoconfirm = "mailer_autoconfirm", phoneAutoconfirm = "phone_autoconfirm"
        case smsProvider = "sms_provider", samlEnabled = "saml_enabled", passkeysEnabled = "passkeys_enabled"
    }

    init(_ methods: SignInMethods) {
        external = [
            "email": methods.emailPassword || methods.magicLink, "anonymous_users": methods.anonymous, "apple": methods.apple,
            "google": methods.google, "phone": methods.phone,
        ]
        disableSignup = false
        // Gatehouse signs a new account in at once and verifies the address beside it.
        mailerAutoconfirm = true
        phoneAutoconfirm = false
        smsProvider = ""
        samlEnabled = false
        passkeysEnabled = methods.passkey
    }
}

/// GoTrue's `user_metadata`: exactly what was set (`AccountMetadata`), the keys that name what
/// the server keeps showing its current value (docs/supabase-compat.md, difference 6).
enum GoTrueMetadata {
    static let displayNameKeys = ["display_name", "full_name", "name"]

    /// GoTrue's words for the rule that a new password needs proof (`reauthentication_needed`).
    static let reauthenticationMessage = "Password update requires reauthentication"

    /// Refuses metadata that would be over the limit, before anything is written.
    static func checkSize(_ object: [String: JSONValue]?, kind: AccountMetadata.Kind) throws {
        _ = try AccountMetadata.fresh(object, kind: kind)
    }

    static func userMetadata(of user: User) -> [String: JSONValue] {
        AccountMetadata.shown(user.userMetadata, of: user)
    }

    /// What GoTrue's own sign-up by address and password writes into the new account's
    /// `user_metadata` after the caller's `data`: the email identity's keys.
    static func signUpData(_ data: [String: JSONValue]?, of user: User) -> [String: JSONValue] {
        let identity: [String: JSONValue] = [
            "sub": .string(user.id.description), "email": .string(user.email ?? ""), "email_verified": .bool(user.emailVerified),
            "phone_verified": .bool(false),
        ]
        return (data ?? [:]).merging(identity) { _, identity in identity }
    }

    /// The profile change a `data` (or `user_metadata`) object asks for: the mapped keys to the
    /// profile, every other key to `user_metadata`; `nil` for no object or an empty one.
    static func patch(from data: [String: JSONValue]?) -> ProfilePatch? {
        guard let data, !data.isEmpty else { return nil }
        var patch = ProfilePatch()
        patch.userMetadata = data
        for key in displayNameKeys {
            if case .string(let name)? = data[key] {
                patch.displayName = name
                break
            }
        }
        if let avatar = data["avatar_url"] {
            if case .string(let url) = avatar { patch.avatarURL = url }
            patch.setsAvatarURL = true
        }
        if case .string(let handle)? = data["handle"] {
            patch.handle = handle
        }
        return patch
    }
}

/// GoTrue's timestamps: RFC 3339, UTC (the contract's own format).
enum GoTrueTime {
    static func format(_ date: Date) -> String { date.rfc3339 }

    /// What a disabled account is banned until (GoTrue's "forever" is a date far ahead).
    static let bannedForever = Date(timeIntervalSince1970: 32_503_680_000)  // 3000-01-01
}
