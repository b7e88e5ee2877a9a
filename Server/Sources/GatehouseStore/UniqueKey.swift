import Foundation

/// Which unique key refused a write: the typed reading of `StoreError.uniqueViolation`, the
/// same on SQLite and PostgreSQL, so callers never match on a database's wording.
public enum UniqueKey: Sendable, Hashable, CaseIterable {
    /// `users.email_normalized`: another account has the address (`insertUser`, `updateEmail`).
    case email
    /// `users.handle`: another account has the handle (`insertUser`, `updateProfile`).
    case handle
    /// `users.phone`: another account has the number (`insertUser`, `setPhone`).
    case phone
    /// `identities (provider, subject)`: the provider's account is linked already (`insertIdentity`).
    case identity
    /// `idempotency_keys (scope, key_hash)`: a request with the same key was stored meanwhile
    /// (`insertIdempotencyKey`).
    case idempotencyKey
    /// `credit_ledger (user_id, idempotency_key)`: the spend's key was used meanwhile (`insertCreditSpend`).
    case creditSpend
    /// `usage_records (user_id, meter, idempotency_key)`: the use's key was used meanwhile (`addUsage`).
    case usageRecord
    /// `passkeys.credential_id`: the credential is registered already (`insertPasskey`).
    case passkeyCredential
    /// `signing_keys_one_active`: another active signing key exists (`insertSigningKey`).
    case activeSigningKey
    /// `server_secrets.name`: another node stored the secret first (`insertSecret`).
    case secret
    /// Any other unique key or primary key, e.g. a random id that collided.
    case other

    /// Each key as SQLite names it (`UNIQUE constraint failed: <columns>`) and as PostgreSQL
    /// does (the constraint's or unique index's name in the migrations).
    private static let names: [(key: UniqueKey, sqlite: String, postgres: String)] = [
        (.email, "users.email_normalized", "users_email_normalized_key"),
        (.handle, "users.handle", "users_handle_key"),
        (.phone, "users.phone", "users_phone"),
        (.identity, "identities.provider, identities.subject", "identities_provider_subject_key"),
        (.idempotencyKey, "idempotency_keys.scope, idempotency_keys.key_hash", "idempotency_keys_pkey"),
        (.creditSpend, "credit_ledger.user_id, credit_ledger.idempotency_key", "credit_ledger_user_id_idempotency_key_key"),
        (.usageRecord, "usage_records.user_id, usage_records.meter, usage_records.period_start, usage_records.idempotency_key", "usage_records_pkey"),
        (.passkeyCredential, "passkeys.credential_id", "passkeys_credential_id_key"),
        (.activeSigningKey, "signing_keys.status", "signing_keys_one_active"),
        (.secret, "server_secrets.name", "server_secrets_pkey"),
    ]

    /// Classifies what `uniqueViolation` carries: SQLite's message, PostgreSQL's constraint
    /// name, or (when PostgreSQL sent no name) its message, which quotes the name.
    init(violation what: String) {
        var name = Substring(what)
        if let range = what.range(of: "UNIQUE constraint failed: ") {
            name = what[range.upperBound...]
        } else if let range = what.range(of: "unique constraint \""), let end = what[range.upperBound...].firstIndex(of: "\"") {
            name = what[range.upperBound..<end]
        }
        self = Self.names.first { $0.sqlite == name || $0.postgres == name }?.key ?? .other
    }
}

extension StoreError {
    /// The unique key a `.uniqueViolation` names; nil for every other error.
    public var uniqueKey: UniqueKey? {
        guard case .uniqueViolation(let what) = self else { return nil }
        return UniqueKey(violation: what)
    }
}
