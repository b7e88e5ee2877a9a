import Foundation
import GatehouseCore
import GatehouseWire

/// Supabase Auth's payloads for the hooks it has (`GATEHOUSE_HOOK_<NAME>_FORMAT=supabase`), so an
/// app moving from Supabase keeps its hook code. Its answers are read by `HookDecision`.
enum SupabaseHookFormat {
    /// `before-user-created`: `{"metadata": {"uuid", "time", "name", "ip_address"}, "user"}`,
    /// the user as `auth.users` would hold it. It has no `id` yet: Gatehouse chooses the id
    /// as it makes the row.
    static func beforeUserCreated(_ account: NewAccount, client: ClientInfo, at now: Date) throws -> Data {
        let provider: String
        switch account.origin {
        case .wayIn(let credential):
            switch credential {
            case .password, .emailLink: provider = account.phone == nil ? "email" : "phone"
            case .apple: provider = "apple"
            case .google: provider = "google"
            case .phone: provider = "phone"
            case .passkey: provider = "passkey"
            case .anonymous: provider = "anonymous"
            case .totp, .recoveryCodes: provider = "email"
            }
        case .byOperator: provider = account.phone == nil ? "email" : "phone"
        }
        var user: [String: Any] = [
            "aud": "authenticated", "role": "", "email": account.email ?? "", "phone": account.phone?.replacingOccurrences(of: "+", with: "") ?? "",
            "app_metadata": ["provider": provider, "providers": [provider]], "user_metadata": [String: Any](), "identities": [Any](),
            "created_at": now.rfc3339, "updated_at": now.rfc3339, "is_anonymous": account.origin == .wayIn(.anonymous),
        ]
        if let claims = account.provider {
            user["user_metadata"] = [
                "sub": claims.subject, "email": claims.email ?? "", "email_verified": claims.emailVerified, "name": claims.name ?? "",
            ] as [String: Any]
        }
        let metadata: [String: Any] = [
            "uuid": UUIDText.lowercase(SecureRandom.uuid()), "time": now.rfc3339, "name": "before-user-created", "ip_address": client.ip ?? "",
        ]
        return try JSONSerialization.data(withJSONObject: ["metadata": metadata, "user": user], options: [.sortedKeys, .withoutEscapingSlashes])
    }

    /// `custom-access-token`: `{"user_id", "claims", "authentication_method"}`, the claims as
    /// GoTrue would sign them (the answer's new names become the token's `app` claims:
    /// `CustomClaimsAnswer`).
    static func customAccessToken(
        user: User, session: SessionID, occasion: TokenOccasion, method: String?, at now: Date, ttl: Int
    ) throws -> Data {
        let raised = occasion == .stepUp || occasion == .signIn(.secondFactor)
        let claims: [String: Any] = [
            "aud": GoTrueUser.audience, "exp": now.unixSeconds + Int64(ttl), "iat": now.unixSeconds, "sub": user.id.description,
            "email": user.email ?? "", "phone": GoTrueUser.phone(user.phone), "role": GoTrueUser.audience, "aal": raised ? "aal2" : "aal1",
            "session_id": session.description, "is_anonymous": user.isAnonymous,
            "app_metadata": try jsonObject(user.appMetadata), "user_metadata": try jsonObject(AccountMetadata.shown(user.userMetadata, of: user)),
            "amr": [["method": method ?? "password", "timestamp": now.unixSeconds] as [String: Any]],
        ]
        let body: [String: Any] = ["user_id": user.id.description, "claims": claims, "authentication_method": authenticationMethod(occasion, method)]
        return try JSONSerialization.data(withJSONObject: body, options: [.sortedKeys, .withoutEscapingSlashes])
    }

    /// GoTrue's names for how a token was asked for.
    static func authenticationMethod(_ occasion: TokenOccasion, _ method: String?) -> String {
        switch occasion {
        case .refresh: return "token_refresh"
        case .stepUp: return "totp"
        case .signIn(let door):
            switch door {
            case .signUp: return "email/signup"
            case .password: return "password"
            case .magicLink, .emailVerification: return "magiclink"
            case .passwordReset: return "recovery"
            case .provider: return "oauth"
            case .phone: return "otp"
            case .anonymous: return "anonymous"
            case .secondFactor: return method == "recovery_code" ? "recovery" : "totp"
            case .passkey: return "passkey"
            case .oauthCode, .handover: return "oauth_provider/authorization_code"
            }
        }
    }

    private static func jsonObject(_ object: [String: JSONValue]) throws -> Any {
        try JSONSerialization.jsonObject(with: JSONEncoder().encode(object))
    }

    /// `send-email`: `{"user", "email_data": {"token", "token_hash", "redirect_to",
    /// "email_action_type", "site_url", "token_new", "token_hash_new"}}`. The user is the
    /// recipient's address (the outbox row names no account); the rendered mail is not in
    /// Supabase's payload, so the hook renders its own, as Supabase's do.
    static func sendEmail(_ message: OutboxMessage) throws -> Data {
        let tokens = MailTokens(message)
        var site = ""
        if let link = tokens.link, let scheme = link.scheme, let host = link.host {
            site = "\(scheme)://\(host)" + (link.port.map { ":\($0)" } ?? "")
        }
        let emailData: [String: Any] = [
            "token": tokens.code ?? "", "token_hash": tokens.token ?? "", "redirect_to": tokens.redirectTo ?? "",
            "email_action_type": emailActionType(message.kind), "site_url": site, "token_new": "", "token_hash_new": "",
        ]
        let user: [String: Any] = ["email": message.recipient, "aud": GoTrueUser.audience, "role": GoTrueUser.audience]
        return try JSONSerialization.data(withJSONObject: ["user": user, "email_data": emailData], options: [.sortedKeys, .withoutEscapingSlashes])
    }

    /// Supabase's `email_action_type` for a mail kind (its notification names where it has one;
    /// Gatehouse's own kind otherwise).
    static func emailActionType(_ kind: String) -> String {
        guard let known = MailKind(rawValue: kind) else { return kind }
        switch known {
        case .verification: return "signup"
        case .passwordReset: return "recovery"
        case .magicLink: return "magiclink"
        case .passwordChanged: return "password_changed_notification"
        case .mfaFactorAdded: return "mfa_factor_enrolled_notification"
        case .mfaFactorRemoved: return "mfa_factor_unenrolled_notification"
        case .phoneChanged: return "phone_changed_notification"
        case .newSignIn, .recoveryCodeUsed, .test: return known.rawValue
        }
    }

    /// `send-sms`: `{"user": {"phone", …}, "sms": {"otp"}}`, the number in GoTrue's form (E.164
    /// without `+`). A notice (an SMS with no code) has an empty `otp` and, Gatehouse's addition,
    /// its `message`; a code's SMS has the rendered `message` too, for a hook that sends it as it is.
    static func sendSMS(_ message: SMSMessage) throws -> Data {
        let user: [String: Any] = ["phone": GoTrueUser.phone(message.to), "aud": GoTrueUser.audience, "role": GoTrueUser.audience]
        let sms: [String: Any] = ["otp": message.code ?? "", "message": message.text]
        return try JSONSerialization.data(withJSONObject: ["user": user, "sms": sms], options: [.sortedKeys, .withoutEscapingSlashes])
    }
}
