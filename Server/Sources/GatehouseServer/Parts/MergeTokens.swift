import Crypto
import Foundation
import GatehouseCore
import GatehouseWire

/// Short-lived, sealed merge tokens: "the anonymous account `from` may be merged into `to`".
/// Stateless and opaque (AES-256-GCM under a key derived from the chain key, finding 8: the
/// holder learns nothing of the other account, not even its id); a second use finds the
/// anonymous account gone.
struct MergeTokens: Sendable {
    let chainKey: RefreshChainKey
    let clock: any WallClock
    static let lifetime: TimeInterval = 600

    struct Claim: Sendable {
        var from: UserID
        var to: UserID
    }

    func make(from: UserID, to: UserID) throws -> String {
        let body = "\(from.description).\(to.description).\(clock.now.unixSeconds + Int64(Self.lifetime))"
        let sealed = try AES.GCM.seal(Data(body.utf8), using: try key())
        guard let combined = sealed.combined else { throw GatehouseError.internalError(nil) }
        return combined.base64URLEncoded
    }

    func open(_ token: String) throws -> Claim {
        guard token.utf8.count <= 512, let data = Data(base64URLEncoded: token), let box = try? AES.GCM.SealedBox(combined: data),
            let opened = try? AES.GCM.open(box, using: try key())
        else { throw invalid }
        let fields = String(decoding: opened, as: UTF8.self).split(separator: ".")
        guard fields.count == 3, let from = UserID(String(fields[0])), let to = UserID(String(fields[1])), let expiry = Int64(fields[2])
        else { throw invalid }
        guard clock.now.unixSeconds < expiry else {
            throw GatehouseError(status: 400, code: .tokenExpired, message: "This merge token has expired. Try linking again.")
        }
        return Claim(from: from, to: to)
    }

    private func key() throws -> SymmetricKey { try chainKey.derived("gatehouse merge token sealing") }

    private var invalid: GatehouseError {
        GatehouseError(status: 400, code: .tokenInvalid, message: "This merge token is not valid.")
    }
}

extension MergeTokens {
    /// 409 `identity_in_use`; an anonymous caller also gets a merge token into `owner`
    /// (decision 4), a permanent one only the error.
    func identityInUse(_ message: String, caller: User, owner: UserID) throws -> GatehouseError {
        var error = GatehouseError(status: 409, code: .identityInUse, message: message)
        if caller.isAnonymous {
            error.details = ["merge_token": .string(try make(from: caller.id, to: owner))]
        }
        return error
    }
}
