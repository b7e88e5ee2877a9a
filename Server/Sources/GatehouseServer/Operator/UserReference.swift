import Foundation
import GatehouseCore
import GatehouseWire
import GatehouseStore

/// How an operator names an account, on every operator surface (the admin API, the console,
/// the `gatehouse users` commands): its id, or its email address.
struct UserReference: Sendable, Equatable {
    let text: String

    init(_ text: String) { self.text = text }

    /// The account named; 404 `not_found` when there is none.
    func resolve(in store: any UserStore) async throws -> User {
        let user: User?
        if let id = UserID(text) {
            user = try await store.user(id: id)
        } else if text.contains("@") {
            user = try await store.user(normalizedEmail: EmailAddress.normalize(text))
        } else {
            user = nil
        }
        guard let user else { throw GatehouseError.notFound("No user matches '\(text)'.") }
        return user
    }
}

/// The words an operator gives for an action (a plan override, a disabling, a credit grant):
/// trimmed, at most 500 characters. The console asks for them; the API and the CLI take them
/// when given.
enum OperatorReason {
    static let maximumLength = 500

    /// `text` trimmed; nil when it is empty and `required` is false. 400 `invalid_request`
    /// when it is longer than 500 characters, or empty and required.
    static func read(_ text: String?, required: Bool) throws -> String? {
        let reason = (text ?? "").trimmingCharacters(in: .whitespacesAndNewlines)
        if reason.isEmpty, !required { return nil }
        guard (1...maximumLength).contains(reason.count) else {
            throw GatehouseError.invalidRequest(
                required ? "Give a reason of 1 to \(maximumLength) characters." : "The reason must be at most \(maximumLength) characters.")
        }
        // A reason is shown in the console, the audit trail and the export: no control
        // characters (a NUL was stored, issue 59 finding 7), one line.
        guard !reason.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else {
            throw GatehouseError.invalidRequest("The reason must be one line of text, without control characters.")
        }
        return reason
    }

    /// A reason the action cannot go without (the console's forms).
    static func required(_ text: String?) throws -> String {
        try read(text, required: true) ?? ""
    }
}
