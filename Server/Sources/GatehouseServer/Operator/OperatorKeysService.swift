import Foundation
import GatehouseCore
import GatehouseWire
import GatehouseStore

/// Rotating the signing key, from the admin API or the console: the old key stays published
/// as long as a token it signed can live; audited with `by`.
struct OperatorKeysService: Sendable {
    /// Writes only its audit row.
    typealias Stores = Void

    let unitOfWork: UnitOfWork<Stores>
    let keys: KeyRing
    let metrics: ServerMetrics
    /// The longest access-token life plus leeway (`KeyRing.retiredKeyPublishSeconds`).
    let retiredKeyPublishSeconds: Int

    @discardableResult
    func rotate(by actor: String, client: ClientInfo?) async throws -> (retired: String, active: String) {
        let (retired, active) = try await keys.rotate(keepPublishedFor: retiredKeyPublishSeconds)
        metrics.keyRotation()
        try await unitOfWork.audit(
            .signingKeyRotated, .success, client: client ?? ClientInfo(ip: nil, userAgent: nil),
            details: ["by": actor, "retired_kid": retired, "kid": active])
        return (retired, active)
    }
}
