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
            "uuid": UUID().uuidString.lowercased(), "time": now.rfc3339, "name": "before-user-created", "ip_address": client.ip ?? "",
        ]
        return try JSONSerialization.data(withJSONObject: ["metadata": metadata, "user": user], options: [.sortedKeys, .withoutEscapingSlashes])
    }
}
