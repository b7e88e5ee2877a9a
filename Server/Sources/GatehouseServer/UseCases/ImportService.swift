import Crypto
import Foundation
import GatehouseCore
import GatehouseStore
import GatehouseWire

/// Accounts from Firebase Auth and Supabase Auth (`gatehouse import`, `/admin/v1/imports/*`).
///
/// Each account is written in a transaction of its own, whole or not at all: the account, its
/// email identity, its provider identities, `user.created` (with `imported_from` and the
/// source's id, so an app backend can map its rows) and an audit row. An account already here
/// under its id is left as it is, so a run can be repeated or resumed after a stop; the unique
/// keys on the id, the address and each identity decide between imports that race.
struct ImportService: Sendable {
    /// What this use case reads and writes: its transactions see the store through this and no more.
    typealias Stores = any UserStore & PasswordStore & IdentityStore

    let store: Stores
    let unitOfWork: UnitOfWork<Stores>
    let lifecycle: AccountLifecycle
    let firebaseKeys: FirebaseHashKeys
    let clock: any WallClock
    /// This server's hasher, told of the schemes an import brought (nil from the CLI: a running
    /// server learns them within `PasswordHasherLifecycle.schemeRefreshSeconds`).
    var hasher: PasswordHasher? = nil

    /// The id a Firebase account gets here (`FirebaseExport.derivedID(digest:)`).
    static func firebaseID(_ localID: String) -> UserID {
        FirebaseExport.derivedID(digest: Array(SHA256.hash(data: Data("firebase:\(localID)".utf8))))
    }

    static func parameters(_ config: FirebaseHashConfig) throws -> FirebaseHashParameters {
        switch FirebaseHashParameters.parse(
            signerKey: config.signerKey, saltSeparator: config.saltSeparator, rounds: config.rounds, memoryCost: config.memCost)
        {
        case .success(let parameters): return parameters
        case .failure(let error): throw GatehouseError.invalidRequest("The hash configuration is not valid: \(error.description).")
        }
    }

    /// A batch's `first_row`: 1 when absent.
    static func firstRow(_ value: Int?) throws -> Int {
        guard let value else { return 1 }
        guard (1...1_000_000_000).contains(value) else { throw GatehouseError.invalidRequest("first_row must be 1–1000000000.") }
        return value
    }

    func firebase(_ request: FirebaseImportRequest) async throws -> ImportReport {
        let rows = FirebaseExport.rows(users: request.users.map(JSONValue.object), firstRow: try Self.firstRow(request.firstRow), now: clock.now, id: Self.firebaseID)
        return try await firebase(rows, hashConfig: request.hashConfig)
    }

    func firebase(_ rows: [ImportRow], hashConfig: FirebaseHashConfig?) async throws -> ImportReport {
        let needsKey = rows.contains {
            if case .account(_, let account) = $0, case .firebaseScrypt? = account.password { true } else { false }
        }
        var keyID: String?
        if let hashConfig {
            keyID = try await firebaseKeys.remember(try Self.parameters(hashConfig), at: clock.now)
        } else if needsKey {
            throw GatehouseError.invalidRequest(
                "Users with passwords need the project's hash configuration (signer key, salt separator, rounds, memory cost).")
        }
        return try await write(rows, source: "firebase", firebaseKeyID: keyID)
    }

    func supabase(_ request: SupabaseImportRequest) async throws -> ImportReport {
        let first = try Self.firstRow(request.firstRow)
        var identities: [SupabaseIdentityRow] = []
        for (index, value) in (request.identities ?? []).enumerated() {
            guard let row = SupabaseExport.identityRow(.object(value)) else {
                throw GatehouseError.invalidRequest("identities[\(index)] is not an auth.identities row.")
            }
            identities.append(row)
        }
        var rows: [ImportRow] = []
        for (index, value) in request.users.enumerated() {
            if let user = SupabaseExport.userRow(.object(value)) {
                rows += SupabaseExport.rows([user], identities: identities, firstRow: first + index, now: clock.now)
            } else {
                let id = value["id"].flatMap { if case .string(let id) = $0 { id } else { nil } }
                rows.append(.refused(ImportRefusal(row: first + index, sourceID: id, reason: "not an auth.users row (id missing or a column of the wrong type)")))
            }
        }
        return try await write(rows, source: "supabase", firebaseKeyID: nil)
    }

    /// Writes the accounts of `rows`, one transaction each, and reports.
    func write(_ rows: [ImportRow], source: String, firebaseKeyID: String?) async throws -> ImportReport {
        var report = ImportReport()
        for row in rows {
            switch row {
            case .refused(let refusal):
                report.refused.append(refusal)
            case .account(let number, let account):
                switch try await write(account, source: source, firebaseKeyID: firebaseKeyID) {
                case .imported: report.imported += 1
                case .unchanged: report.unchanged += 1
                case .refused(let reason): report.refused.append(ImportRefusal(row: number, sourceID: account.sourceID, reason: reason))
                }
            }
        }
        if report.imported > 0, let hasher { try await hasher.useSchemes(store.passwordHashSchemes()) }
        return report
    }

    enum Outcome: Equatable {
        case imported, unchanged
        case refused(String)
    }

    private func write(_ account: ImportedAccount, source: String, firebaseKeyID: String?) async throws -> Outcome {
        if try await store.user(id: account.id) != nil { return .unchanged }
        // An earlier or concurrent import of this same account may own the address or identity.
        if let normalized = account.email.map(EmailAddress.normalize), let owner = try await store.user(normalizedEmail: normalized) {
            return owner.id == account.id ? .unchanged : .refused("another account here has this email address")
        }
        for identity in account.identities {
            guard let linked = try await store.identity(provider: identity.provider, subject: identity.subject) else { continue }
            return linked.userID == account.id ? .unchanged : .refused("this \(identity.provider.rawValue) account is linked to another account here")
        }
        let hash: String?
        switch account.password {
        case .firebaseScrypt(let salt, let digest)?:
            guard let firebaseKeyID else { return .refused("a Firebase password without the project's hash configuration") }
            hash = FirebaseScrypt.encode(keyID: firebaseKeyID, salt: salt, hash: digest)
        case .encoded(let text)?:
            hash = text
        case nil:
            hash = nil
        }
        do {
            try await lifecycle.withTemporaryHandle { handle in
                try await unitOfWork.run { work in
                    try await insert(work, account, hash: hash, handle: handle, source: source)
                }
            }
            return .imported
        } catch let error as StoreError where error.uniqueKey != nil && error.uniqueKey != .handle {
            // A concurrent import of the same account, or a sign-up with its address, came first.
            if try await store.user(id: account.id) != nil { return .unchanged }
            return .refused("another account here took this email address or identity during the import")
        }
    }

    private func insert(_ work: Work<Stores>, _ account: ImportedAccount, hash: String?, handle: String?, source: String) async throws {
        let normalized = account.email.map(EmailAddress.normalize)
        var user = User(
            id: account.id, email: account.email, normalizedEmail: normalized, emailVerifiedAt: account.emailVerifiedAt,
            isAnonymous: account.isAnonymous, displayName: account.displayName, handle: handle,
            avatarURL: account.avatarURL, onboardingComplete: false, passwordHash: hash,
            passwordChangedAt: hash == nil ? nil : account.createdAt,
            disabledAt: account.disabled ? work.now : nil, disabledReason: account.disabled ? "disabled in \(source.capitalized) before the import" : nil,
            createdAt: account.createdAt, updatedAt: work.now)
        user.lastSignInAt = account.lastSignInAt
        (user.userMetadata, user.appMetadata) = (account.userMetadata, account.appMetadata)
        try await work.tx.insertUser(user)
        var providers: [Provider] = []
        if account.isAnonymous {
            try await work.tx.insertIdentity(
                Identity(userID: user.id, provider: .anonymous, subject: user.id.description, createdAt: account.createdAt))
            providers.append(.anonymous)
        }
        if let email = account.email, let normalized {
            try await work.tx.insertIdentity(
                Identity(userID: user.id, provider: .email, subject: normalized, email: email, createdAt: account.createdAt))
            providers.append(.email)
        }
        for identity in account.identities {
            try await work.tx.insertIdentity(
                Identity(userID: user.id, provider: identity.provider, subject: identity.subject, email: identity.email, createdAt: account.createdAt))
            providers.append(identity.provider)
        }
        try await work.record(
            .userCreated, user: user.id,
            data: ["provider": (providers.first ?? .email).rawValue, "imported_from": source, "source_id": account.sourceID])
        try await work.audit(
            .userImported, user: user.id,
            details: ["source": source, "source_id": account.sourceID, "providers": providers.map(\.rawValue).joined(separator: ",")])
    }
}
