import Foundation
import GatehouseCore
import GatehouseWire
import GatehouseStore
import GatehouseTestSupport
import Testing

/// `StoreError.uniqueKey` names the key a write broke, exactly, on SQLite and PostgreSQL alike.
@Suite struct UniqueKeyStoreContractTests {
    static let now = Date(unixSeconds: 1_800_000_000)

    static func user(_ email: String?, handle: String? = nil) -> User {
        StoreContractTests.user(email, handle: handle)
    }

    /// Runs `body`, which must fail with a unique violation of `key`.
    static func expectViolation(
        _ key: UniqueKey, sourceLocation: SourceLocation = #_sourceLocation, _ body: () async throws -> Void
    ) async {
        do {
            try await body()
            Issue.record("no unique violation; expected \(key)", sourceLocation: sourceLocation)
        } catch let error as StoreError {
            #expect(error.uniqueKey == key, "\(error)", sourceLocation: sourceLocation)
        } catch {
            Issue.record("not a StoreError: \(error)", sourceLocation: sourceLocation)
        }
    }

    @Test(arguments: Backend.available)
    func everyUniqueKeyTheStoreCanBreakIsNamed(_ backend: Backend) async throws {
        try await TestDatabase.withStore(backend) { store in
            let now = Self.now
            let ann = Self.user("ann@example.com", handle: "ann")
            let bob = Self.user("bob@example.com", handle: "bob")
            try await store.insertUser(ann)
            try await store.insertUser(bob)

            await Self.expectViolation(.email) { try await store.insertUser(Self.user("ANN@example.com")) }
            await Self.expectViolation(.email) {
                try await store.updateEmail(bob.id, email: "Ann@example.com", normalizedEmail: "ann@example.com", verifiedAt: nil, now: now)
            }
            await Self.expectViolation(.handle) { try await store.insertUser(Self.user("carl@example.com", handle: "ann")) }
            await Self.expectViolation(.handle) {
                try await store.updateProfile(bob.id, displayName: nil, handle: "ann", avatarURL: nil, onboardingComplete: true, now: now)
            }

            try await store.insertIdentity(Identity(userID: ann.id, provider: .email, subject: "ann@example.com", createdAt: now))
            await Self.expectViolation(.identity) {
                try await store.insertIdentity(Identity(userID: bob.id, provider: .email, subject: "ann@example.com", createdAt: now))
            }

            try await store.insertIdempotencyKey(scope: "signup", keyHash: [1, 2, 3], userID: ann.id, sessionID: .random(), at: now)
            await Self.expectViolation(.idempotencyKey) {
                try await store.insertIdempotencyKey(scope: "signup", keyHash: [1, 2, 3], userID: bob.id, sessionID: .random(), at: now)
            }

            func spend() -> CreditSpend {
                CreditSpend(userID: ann.id, credit: "exports", action: "export", subject: nil, idempotencyKey: "k1", periodStart: now, createdAt: now)
            }
            try await store.insertCreditSpend(spend())
            await Self.expectViolation(.creditSpend) { try await store.insertCreditSpend(spend()) }

            let use = UsageRecord(userID: ann.id, meter: "minutes", amount: 1, idempotencyKey: "k1", periodStart: now, createdAt: now)
            #expect(try await store.addUsage(use, limit: nil) == 1)
            await Self.expectViolation(.usageRecord) { _ = try await store.addUsage(use, limit: nil) }

            func key(_ kid: String) -> SigningKeyRecord {
                SigningKeyRecord(kid: kid, algorithm: "ES256", privateKey: [1], encryption: "none", publicJWK: "{}", status: "active", createdAt: now)
            }
            try await store.insertSigningKey(key("k1"))
            await Self.expectViolation(.activeSigningKey) { try await store.insertSigningKey(key("k2")) }

            try await store.insertSecret(named: "refresh", value: [1], encryption: "none", at: now)
            await Self.expectViolation(.secret) { try await store.insertSecret(named: "refresh", value: [2], encryption: "none", at: now) }

            // Keys nobody needs to tell apart (random ids) are `other`.
            let session = Session(userID: ann.id, provider: "email", createdAt: now)
            try await store.insertSession(session)
            await Self.expectViolation(.other) { try await store.insertSession(session) }
        }
    }

    @Test func theWordingOfEitherDatabaseIsClassifiedInOnePlace() {
        let cases: [(String, UniqueKey)] = [
            ("UNIQUE constraint failed: users.email_normalized", .email),
            ("users_email_normalized_key", .email),
            ("UNIQUE constraint failed: users.handle", .handle),
            ("users_handle_key", .handle),
            ("UNIQUE constraint failed: identities.provider, identities.subject", .identity),
            ("identities_provider_subject_key", .identity),
            ("UNIQUE constraint failed: idempotency_keys.scope, idempotency_keys.key_hash", .idempotencyKey),
            ("idempotency_keys_pkey", .idempotencyKey),
            ("UNIQUE constraint failed: credit_ledger.user_id, credit_ledger.idempotency_key", .creditSpend),
            ("credit_ledger_user_id_idempotency_key_key", .creditSpend),
            ("UNIQUE constraint failed: usage_records.user_id, usage_records.meter, usage_records.period_start, usage_records.idempotency_key", .usageRecord),
            ("usage_records_pkey", .usageRecord),
            ("UNIQUE constraint failed: signing_keys.status", .activeSigningKey),
            ("signing_keys_one_active", .activeSigningKey),
            ("UNIQUE constraint failed: server_secrets.name", .secret),
            ("server_secrets_pkey", .secret),
            // PostgreSQL's message, when it sent no constraint name.
            ("duplicate key value violates unique constraint \"users_handle_key\"", .handle),
            // Only whole names count: no guessing from a part.
            ("UNIQUE constraint failed: sessions.id", .other),
            ("sessions_pkey", .other),
            ("users_handle_history_key", .other),
            ("handle", .other),
            ("", .other),
        ]
        for (what, key) in cases {
            #expect(StoreError.uniqueViolation(what).uniqueKey == key, "\(what)")
        }
        #expect(StoreError.conflict("users_handle_key").uniqueKey == nil)
        #expect(StoreError.database("23505").uniqueKey == nil)
    }
}
