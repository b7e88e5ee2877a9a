import Foundation
import GatehouseCore
import GatehouseWire
import GatehouseStore

/// Removing a second factor, by its owner (`MFAService`) or by support (`OperatorService`):
/// with the last confirmed one go the recovery codes and every session's raised level; the
/// removal is audited (with `by` for support), and a confirmed factor's is recorded and mailed.
struct FactorRemoval: Sendable {
    let mail: AccountMail

    typealias Stores = any UserStore & MFAFactorStore & RecoveryCodeStore & SessionAssuranceStore

    /// 404 `not_found` when the account has no factor `id`.
    func remove(_ work: Work<Stores>, _ user: User, factor id: UUID, by admin: String?) async throws {
        let tx = work.tx
        try await tx.lockUser(user.id)
        guard let factor = try await tx.mfaFactors(of: user.id).first(where: { $0.id == id }),
            try await tx.deleteMFAFactor(id, of: user.id)
        else { throw MFAService.notFound }
        if try await !tx.mfaFactors(of: user.id).contains(where: \.isConfirmed) {
            // The last one: its codes go, and no session keeps the level it gave (finding 5).
            try await tx.deleteRecoveryCodes(of: user.id)
            _ = try await tx.lowerSessions(of: user.id)
        }
        var details = ["factor_id": MFAService.id(factor)]
        details["by"] = admin
        try await work.audit(.mfaFactorRemoved, user: user.id, details: details)
        guard factor.isConfirmed else { return }
        try await work.record(.mfaFactorRemoved, user: user.id, data: ["factor_id": MFAService.id(factor)])
        try await mail.queueSecurityNotice(
            work, user: user, kind: .mfaFactorRemoved, values: ["factor": factor.name, "by": admin == nil ? "" : " by support"])
    }
}
