import Foundation
import GatehouseWire

/// The rules for an account's two free JSON objects (issue 46), in one place for every surface
/// that writes them: `/auth/v1` (sign-up `data`, `PUT /user`, the service role's admin calls) and
/// `PATCH /v1/me`.
///
/// - `user_metadata`: the holder's, written by the holder and by operators.
/// - `app_metadata`: written by operators only (the service role is one); what an app's rules
///   read, so a holder can never grant themselves a role.
///
/// A write is a top-level merge, as GoTrue's: each key given replaces that key, `null` removes
/// it, keys not given stay. Each object is at most `maxBytes` of compact JSON once merged.
public enum AccountMetadata {
    /// The two objects.
    public enum Kind: String, CaseIterable, Sendable {
        case user = "user_metadata"
        case app = "app_metadata"

        /// Who may write it.
        public func writable(by writer: Writer) -> Bool {
            switch (self, writer) {
            case (.user, .holder), (.user, .operator), (.app, .operator): true
            case (.app, .holder): false
            }
        }

        /// Keys the server derives and never stores: the ways in (`provider`, `providers`) in
        /// `app_metadata`. `user_metadata` keeps every key as it was set (GoTrue's answers give
        /// back exactly what was set); the keys that name something the server keeps show its
        /// current value (`shownKeys`).
        public var derivedKeys: Set<String> {
            switch self {
            case .user: []
            case .app: ["provider", "providers"]
            }
        }
    }

    /// The `user_metadata` keys that name what the server keeps (the profile's fields and the
    /// address's state): stored as set, and shown with the server's current value, so a
    /// holder's write cannot make them say what is not so.
    public static let shownKeys: Set<String> = ["display_name", "full_name", "name", "avatar_url", "handle", "email", "email_verified", "phone_verified"]

    /// `stored` as answers and tokens show it: every key as set, each of `shownKeys` it has with
    /// `user`'s current value (a profile field that is now empty keeps what was set).
    public static func shown(_ stored: [String: JSONValue], of user: User) -> [String: JSONValue] {
        var shown = stored
        for key in shownKeys where stored[key] != nil {
            let current: JSONValue? =
                switch key {
                case "display_name", "full_name", "name": user.displayName.map(JSONValue.string)
                case "avatar_url": user.avatarURL.map(JSONValue.string)
                case "handle": user.handle.map(JSONValue.string)
                case "email": user.email.map(JSONValue.string)
                case "email_verified": .bool(user.emailVerified)
                default: .bool(user.phoneVerifiedAt != nil)
                }
            if let current { shown[key] = current }
        }
        return shown
    }

    /// Who writes.
    public enum Writer: Sendable {
        /// The account's holder, with a session.
        case holder
        /// An operator: the admin API, the console, the service role key.
        case `operator`

        /// The audit row's `by` for a holder's own change (an operator's names its tool).
        public var name: String {
            switch self {
            case .holder: "user"
            case .operator: "operator"
            }
        }
    }

    /// The most compact JSON each object may take, in bytes.
    public static let maxBytes = 4_096

    /// `current` with `patch` merged at the top level (`null` removes a key); derived keys in
    /// the patch (`app_metadata`'s ways in) are ignored. Throws 400 `invalid_request` when the result is over `maxBytes`.
    public static func merged(_ current: [String: JSONValue], _ patch: [String: JSONValue], kind: Kind) throws(GatehouseError) -> [String: JSONValue] {
        var result = current
        for (key, value) in patch where !kind.derivedKeys.contains(key) {
            if value == .null { result[key] = nil } else { result[key] = value }
        }
        guard (encoded(result)?.utf8.count ?? 0) <= maxBytes else {
            throw GatehouseError.invalidRequest("\(kind.rawValue) may hold at most \(maxBytes) bytes of JSON.")
        }
        return result
    }

    /// A new account's object as it will be stored (`patch` on nothing); throws as `merged` does.
    public static func fresh(_ patch: [String: JSONValue]?, kind: Kind) throws(GatehouseError) -> [String: JSONValue] {
        try merged([:], patch ?? [:], kind: kind)
    }

    /// Compact JSON with sorted keys, as stored; nil for an empty object.
    public static func encoded(_ object: [String: JSONValue]) -> String? {
        guard !object.isEmpty else { return nil }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        guard let data = try? encoder.encode(object) else { return nil }
        return String(decoding: data, as: UTF8.self)
    }

    /// A stored object; `{}` for nothing (or for text that is not an object).
    public static func decoded(_ text: String?) -> [String: JSONValue] {
        guard let text, let object = try? JSONDecoder().decode([String: JSONValue].self, from: Data(text.utf8)) else { return [:] }
        return object
    }
}
