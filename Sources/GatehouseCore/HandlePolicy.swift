import Foundation
import GatehouseWire

/// Handle rules (Handz CH07 §4, decision 9): a–z, 0–9 and underscore, within the preset's
/// length, compared and stored lowercase (input may use A–Z), not a reserved word.
public struct HandlePolicy: Sendable {
    public let settings: HandleSettings

    public init(settings: HandleSettings) { self.settings = settings }

    /// Words no one may take, whatever their case.
    public static let reserved: Set<String> = [
        "admin", "administrator", "root", "system", "support", "help", "helpdesk", "gatehouse", "official", "staff",
        "team", "moderator", "mod", "security", "abuse", "postmaster", "webmaster", "hostmaster", "noreply", "no_reply",
        "info", "contact", "billing", "payments", "api", "www", "mail", "email", "null", "undefined", "anonymous",
        "guest", "user", "users", "me", "settings", "account", "accounts", "login", "logout", "signup", "signin",
        "register", "auth", "oauth", "privacy", "terms", "legal", "status", "about", "handz", "oklah", "syncwell",
        "hannah", "everyone", "here", "owner",
    ]

    /// Why `handle` cannot be used, or `nil` when it can. Reasons: `too_short`, `too_long`,
    /// `invalid_characters`, `reserved`.
    public func problem(_ handle: String) -> String? {
        let lowered = handle.lowercased()
        if lowered.count < settings.minLength { return "too_short" }
        if lowered.count > settings.maxLength { return "too_long" }
        let allowed = lowered.unicodeScalars.allSatisfy { scalar in
            ("a"..."z").contains(scalar) || ("0"..."9").contains(scalar) || scalar == "_"
        }
        if !allowed { return "invalid_characters" }
        if Self.reserved.contains(lowered) { return "reserved" }
        return nil
    }

    /// The stored form.
    public func normalize(_ handle: String) -> String { handle.lowercased() }

    public func message(for problem: String) -> String {
        switch problem {
        case "too_short": return "A handle needs at least \(settings.minLength) characters."
        case "too_long": return "A handle can have at most \(settings.maxLength) characters."
        case "invalid_characters": return "A handle can use only letters, digits and underscores."
        case "reserved": return "This handle is reserved."
        case "taken": return "This handle is already taken."
        default: return "This handle cannot be used."
        }
    }
}
