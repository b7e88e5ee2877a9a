import Foundation
import GatehouseCore
import GatehouseWire
import GatehouseStore

/// The limits on asking for mail (a reset link, a magic link): per client address and per
/// email address, the same work whether or not the address has an account.
struct InboxRequests: Sendable {
    let throttle: Throttle
    let credentials: Credentials
    let settings: EmailSettings

    /// Validates the address (canonical form only) and counts the request against the client's
    /// address and the email address; returns the address and its normalised form.
    func check(email: String, kind: MailKind, client: ClientInfo) async throws -> (address: String, normalized: String) {
        try await throttle.limitIP("mail-request", client: client, limit: settings.requestsPerIPPerHour, windowSeconds: 3_600)
        let address = try credentials.canonicalAddress(email)
        let normalized = EmailAddress.normalize(address)
        let key = "mail-request:\(kind.rawValue):\(normalized)"
        if settings.requestIntervalSeconds > 0 {
            try await throttle.limit(key, limit: 1, windowSeconds: Int64(settings.requestIntervalSeconds))
        }
        try await throttle.limit(key, limit: settings.requestsPerDay, windowSeconds: 86_400)
        return (address, normalized)
    }
}
