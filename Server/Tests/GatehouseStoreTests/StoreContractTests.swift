import Foundation
import GatehouseCore
@testable import GatehouseStore
import GatehouseTestSupport
import Testing

/// The behaviour every store implementation must have; runs against SQLite and PostgreSQL.
@Suite struct StoreContractTests {
    func withStore(_ backend: Backend, _ body: @escaping @Sendable (SQLStore) async throws -> Void) async throws {
        try await TestDatabase.withStore(backend, body)
    }

    static func user(_ email: String? = nil, handle: String? = nil, at time: Int64 = 1_800_000_000) -> User {
        User(
            id: .random(), email: email, normalizedEmail: email.map(EmailAddress.normalize), handle: handle,
            createdAt: Date(unixSeconds: time))
    }

    /// The census of imported hash schemes (the decoys an unknown address is checked against)
    /// finds each bcrypt cost and Firebase project, and nothing of Argon2id or of accounts
    /// with no password; it reads through the partial index of migration 34.
    @Test(arguments: Backend.available)
    func theHashCensusNamesEachImportedScheme(_ backend: Backend) async throws {
        try await TestDatabase.withStore(backend) { store in
            let hashes: [String?] = [
                "$argon2id$v=19$m=19456,t=2,p=1$Xaxc6cDvs7D7TLliSnzPoA$TsIdtcxlNcLIkYjqMUcu9yi5l7zaILbp9Stamf6GbqU",
                "$2a$10$N9qo8uLOickgx2ZMRZoMyeIjZAgcfl7p92ldGxad68LJZdL17lhWy",
                "$2b$12$N9qo8uLOickgx2ZMRZoMyeIjZAgcfl7p92ldGxad68LJZdL17lhWy",
                "$2b$12$KIXQJQ9fyXc3zsxMb0yG0uT7fZ8g1Q8oQh1p3W5bqJ6wq0lW1o2Ki",
                "$firebase-scrypt$0123456789abcdef$c2FsdA==$aGFzaA==",
                nil,
            ]
            for (index, hash) in hashes.enumerated() {
                var user = Self.user("census\(index)@example.com")
                user.passwordHash = hash
                try await store.insertUser(user)
            }
            #expect(Set(try await store.passwordHashSchemes()) == ["$2a$10$", "$2b$12$", "$firebase-scrypt$0123456789abcdef"])
        }
    }

    @Test(arguments: Backend.available)
    func migrationsApplyOnceAndRecordThemselves(_ backend: Backend) async throws {
        try await TestDatabase.with(backend) { database, _ in
            let migrator = Migrator(database: database)
            #expect(try await migrator.migrate(now: 1) == Migrations.all(for: database.dialect).map(\.version))
            #expect(try await migrator.migrate(now: 2) == [])
            let rows = try await database.query("SELECT version, checksum FROM gatehouse_migrations ORDER BY version")
            #expect(try rows.map { try $0.int("version") } == Migrations.all(for: database.dialect).map { Int64($0.version) })
        }
    }

    @Test(arguments: Backend.available)
    func anEditedMigrationIsRefused(_ backend: Backend) async throws {
        try await TestDatabase.with(backend) { database, _ in
            let original = Migration(version: 1, name: "t", statements: ["CREATE TABLE t (a TEXT)"])
            try await Migrator(database: database, migrations: [original]).migrate(now: 1)
            let edited = Migration(version: 1, name: "t", statements: ["CREATE TABLE t (a TEXT, b TEXT)"])
            await #expect(throws: StoreError.self) {
                try await Migrator(database: database, migrations: [edited]).migrate(now: 2)
            }
        }
    }

    @Test(arguments: Backend.available)
    func aDatabaseNewerThanTheCodeIsRefused(_ backend: Backend) async throws {
        try await TestDatabase.with(backend) { database, _ in
            let both = [
                Migration(version: 1, name: "a", statements: ["CREATE TABLE a (x TEXT)"]),
                Migration(version: 2, name: "b", statements: ["CREATE TABLE b (x TEXT)"]),
            ]
            try await Migrator(database: database, migrations: both).migrate(now: 1)
            await #expect(throws: StoreError.self) {
                try await Migrator(database: database, migrations: [both[0]]).migrate(now: 2)
            }
        }
    }

    @Test(arguments: Backend.available)
    func usersRoundTripByIDAndEmail(_ backend: Backend) async throws {
        try await withStore(backend) { store in
            var user = Self.user("Ann@Example.com", handle: "ann")
            user.emailVerifiedAt = Date(unixSeconds: 1_800_000_100)
            user.displayName = "Ann 🌟"
            user.passwordHash = "$argon2id$v=19$m=19456,t=2,p=1$c2FsdA$aGFzaA"
            try await store.insertUser(user)
            #expect(try await store.user(id: user.id) == user)
            #expect(try await store.user(normalizedEmail: "ann@example.com") == user)
            #expect(try await store.user(id: .random()) == nil)
            #expect(try await store.user(normalizedEmail: "nobody@example.com") == nil)
        }
    }

    @Test(arguments: Backend.available)
    func emailsAndHandlesAreUnique(_ backend: Backend) async throws {
        try await withStore(backend) { store in
            try await store.insertUser(Self.user("a@x.io", handle: "taken"))
            await #expect {
                try await store.insertUser(Self.user("A@X.IO"))
            } throws: { error in
                if case StoreError.uniqueViolation = error { return true }
                return false
            }
            await #expect {
                try await store.insertUser(Self.user("b@x.io", handle: "taken"))
            } throws: { error in
                if case StoreError.uniqueViolation = error { return true }
                return false
            }
            // Accounts without email or handle do not collide with each other.
            try await store.insertUser(Self.user())
            try await store.insertUser(Self.user())
        }
    }

    @Test(arguments: Backend.available)
    func concurrentInsertsOfOneEmailCreateExactlyOneUser(_ backend: Backend) async throws {
        try await withStore(backend) { store in
            let outcomes = await withTaskGroup(of: Bool.self) { group in
                for index in 0..<20 {
                    group.addTask {
                        let email = index.isMultiple(of: 2) ? "race@example.com" : "RACE@example.com"
                        do {
                            try await store.insertUser(Self.user(email))
                            return true
                        } catch {
                            return false
                        }
                    }
                }
                return await group.reduce(into: [Bool]()) { $0.append($1) }
            }
            #expect(outcomes.filter { $0 }.count == 1)
            let stored = try await store.users(search: "race@", before: nil, limit: 50)
            #expect(stored.count == 1)
        }
    }

    @Test(arguments: Backend.available)
    func identitiesAreKeyedByProviderAndSubject(_ backend: Backend) async throws {
        try await withStore(backend) { store in
            let user = Self.user("i@x.io")
            try await store.insertUser(user)
            let apple = Identity(
                userID: user.id, provider: .apple, subject: "001.abc", email: "x@privaterelay.appleid.com",
                isPrivateRelay: true, createdAt: Date(unixSeconds: 1_800_000_000))
            let email = Identity(userID: user.id, provider: .email, subject: "i@x.io", email: "i@x.io", createdAt: Date(unixSeconds: 1_800_000_001))
            try await store.insertIdentity(apple)
            try await store.insertIdentity(email)
            #expect(try await store.identities(of: user.id) == [apple, email])
            let other = Self.user()
            try await store.insertUser(other)
            await #expect(throws: StoreError.self) {
                try await store.insertIdentity(Identity(userID: other.id, provider: .apple, subject: "001.abc", createdAt: Date()))
            }
        }
    }

    @Test(arguments: Backend.available)
    func usersPageNewestFirstAndSearch(_ backend: Backend) async throws {
        try await withStore(backend) { store in
            var created: [User] = []
            for index in 0..<7 {
                let user = Self.user("user\(index)@example.com", handle: "h\(index)", at: 1_800_000_000 + Int64(index / 2))
                try await store.insertUser(user)
                created.append(user)
            }
            var seen: [UserID] = []
            var cursor: RowCursor?
            repeat {
                let page = try await store.users(search: nil, before: cursor, limit: 3)
                seen += page.map(\.id)
                cursor = page.count == 3 ? page.last.map { RowCursor(createdAt: $0.createdAt.unixSeconds, id: $0.id.description) } : nil
            } while cursor != nil
            #expect(Set(seen) == Set(created.map(\.id)))
            #expect(seen.count == 7)
            let times = try await store.users(search: nil, before: nil, limit: 10).map { $0.createdAt.unixSeconds }
            #expect(times == times.sorted(by: >))
            #expect(try await store.users(search: "USER3@", before: nil, limit: 10).map(\.id) == [created[3].id])
            #expect(try await store.users(search: "h5", before: nil, limit: 10).map(\.id) == [created[5].id])
            // LIKE wildcards in the search are literal.
            #expect(try await store.users(search: "user_", before: nil, limit: 10).isEmpty)
            #expect(try await store.users(search: "%", before: nil, limit: 10).isEmpty)
        }
    }

    /// The search orders its matches newest first (ties by id) and cuts them to the page before
    /// it reads any account (migration 35): a walk by cursor meets every match once, in order; an
    /// account that matches two ways comes once; a narrowed search keeps only what the filter
    /// names, in the same order. The same holds for each of the search's ways (`way`: the
    /// filter's `denseFrom` and `walkAtMost`): from the matches (the default: fewer than 5,000
    /// accounts share the prefix); walking the accounts newest first (0 and 1,000: every search
    /// walks, and every walk covers the whole list); and a walk bounded short of the page, which
    /// falls back on the matches when the page does not fill within it (0 and 2; 0 and 1, which
    /// falls back in the narrowed search too), a week at a time (migration 37): the pairs of
    /// matches are three weeks apart, so the weeks between hold none, and a cursor starts a page
    /// inside a week.
    @Test(arguments: Backend.available, [[UserFilter.denseFrom, UserFilter.walkAtMost], [0, 1_000], [0, 2], [0, 1]])
    func aSearchPagesItsMatchesNewestFirstAndNarrows(_ backend: Backend, way: [Int]) async throws {
        @Sendable func filter(_ search: String) -> UserFilter {
            var filter = UserFilter(search: search)
            (filter.denseFrom, filter.walkAtMost) = (way[0], way[1])
            return filter
        }
        try await withStore(backend) { store in
            var matching: [User] = []
            for index in 0..<9 {
                // Pairs created in the same second, three weeks after the pair before: the id
                // decides between them.
                let user = Self.user(
                    "pager\(index)@example.com", handle: index == 4 ? "pager-handle" : "p\(index)", at: 1_800_000_000 + Int64(index / 2) * 1_814_400)
                try await store.insertUser(user)
                matching.append(user)
            }
            let byProvider = Self.user("someone@example.com", handle: "someone", at: 1_800_000_100)
            try await store.insertUser(byProvider)
            try await store.insertIdentity(
                Identity(userID: byProvider.id, provider: .apple, subject: "PAGER", email: nil, createdAt: Date(unixSeconds: 1_800_000_100)))
            matching.append(byProvider)
            try await store.insertUser(Self.user("other@example.com", handle: "pagerless-not", at: 1_800_000_050))
            try await store.insertUser(Self.user("pagex@example.com", at: 1_800_000_200))
            // A provider's subject matches as it is, the address and the handle by a prefix in any
            // case: "pagerless-not" is a handle with the prefix.
            var seen: [UserID] = []
            var cursor: RowCursor?
            // Five pages at most: a cursor that was not applied would walk forever.
            for _ in 0..<5 {
                let page = try await store.users(matching: filter("PAGER"), before: cursor, limit: 3)
                seen += page.map(\.id)
                cursor = page.count == 3 ? page.last.map { RowCursor(createdAt: $0.createdAt.unixSeconds, id: $0.id.description) } : nil
                if cursor == nil { break }
            }
            let other = try #require(try await store.user(handle: "pagerless-not"))
            let expected = (matching + [other]).sorted { ($0.createdAt, $0.id.description) > ($1.createdAt, $1.id.description) }.map(\.id)
            #expect(seen == expected)
            #expect(expected.count == 11)

            let disabledAt = Date(unixSeconds: 1_800_000_300)
            for user in [matching[1], matching[4], matching[7]] {
                #expect(try await store.setDisabled(user.id, at: disabledAt, reason: "test", now: disabledAt))
            }
            var disabled = filter("pager")
            disabled.disabledOnly = true
            let narrowed = try await store.users(matching: disabled, before: nil, limit: 2)
            let expectedDisabled = [matching[7], matching[4], matching[1]]
                .sorted { ($0.createdAt, $0.id.description) > ($1.createdAt, $1.id.description) }.map(\.id)
            #expect(narrowed.map(\.id) == Array(expectedDisabled.prefix(2)))
            let last = try #require(narrowed.last)
            let rest = try await store.users(
                matching: disabled, before: RowCursor(createdAt: last.createdAt.unixSeconds, id: last.id.description), limit: 2)
            #expect(rest.map(\.id) == [expectedDisabled[2]])
            // The exact ways in, and LIKE's wildcards taken as they are.
            #expect(try await store.users(matching: filter(matching[3].id.description), before: nil, limit: 5).map(\.id) == [matching[3].id])
            #expect(try await store.users(matching: filter("pager_"), before: nil, limit: 5).isEmpty)
            #expect(try await store.users(matching: filter("%"), before: nil, limit: 5).isEmpty)
            #expect(try await store.users(matching: filter("pager-h"), before: nil, limit: 5).map(\.id) == [matching[4].id])
        }
    }

    @Test(arguments: Backend.available)
    func disablingAndEnabling(_ backend: Backend) async throws {
        try await withStore(backend) { store in
            let user = Self.user("d@x.io")
            try await store.insertUser(user)
            let when = Date(unixSeconds: 1_800_000_500)
            #expect(try await store.setDisabled(user.id, at: when, reason: "abuse", now: when))
            let disabled = try #require(try await store.user(id: user.id))
            #expect(disabled.disabledAt == when)
            #expect(disabled.disabledReason == "abuse")
            #expect(try await store.setDisabled(user.id, at: nil, reason: "ignored", now: when))
            let enabled = try #require(try await store.user(id: user.id))
            #expect(enabled.disabledAt == nil && enabled.disabledReason == nil)
            #expect(try await store.setDisabled(.random(), at: when, reason: nil, now: when) == false)
        }
    }

    @Test(arguments: Backend.available)
    func transactionsCommitOrRollBackWhole(_ backend: Backend) async throws {
        try await withStore(backend) { store in
            struct Boom: Error {}
            let first = Self.user("t1@x.io")
            await #expect(throws: Boom.self) {
                try await store.transaction { tx in
                    try await tx.insertUser(first)
                    try await tx.insertIdentity(Identity(userID: first.id, provider: .email, subject: "t1@x.io", createdAt: Date()))
                    throw Boom()
                }
            }
            #expect(try await store.user(id: first.id) == nil)
            let second = Self.user("t2@x.io")
            try await store.transaction { tx in
                try await tx.insertUser(second)
                // A nested transaction joins the outer one.
                try await tx.transaction { inner in
                    try await inner.insertIdentity(Identity(userID: second.id, provider: .email, subject: "t2@x.io", createdAt: Date()))
                }
            }
            #expect(try await store.user(id: second.id) != nil)
            #expect(try await store.identities(of: second.id).count == 1)
        }
    }

    /// A transaction whose caller is cancelled (a client gone, a deadline) leaves the database
    /// usable: on SQLite its ROLLBACK was dropped from the thread pool's queue with the cancelled
    /// task, leaving the writer inside the transaction and every later write failing ("cannot
    /// start a transaction within a transaction"). SQLite's body sees the cancellation and rolls
    /// back; PostgreSQL's runs on its leased connection to its end, as documented in
    /// `PostgresDatabase.withLease`.
    @Test(arguments: Backend.available)
    func aCancelledTransactionRollsBackAndTheNextOneRuns(_ backend: Backend) async throws {
        try await withStore(backend) { store in
            let lost = Self.user("cancelled@x.io")
            let started = AsyncStream<Void>.makeStream()
            let task = Task {
                try await store.transaction { tx in
                    try await tx.insertUser(lost)
                    started.continuation.yield()
                    try await Task.sleep(for: .seconds(2))
                }
            }
            for await _ in started.stream { break }
            task.cancel()
            _ = await task.result
            if backend == .sqlite { #expect(try await store.user(id: lost.id) == nil) }
            let kept = Self.user("after@x.io")
            try await store.transaction { tx in try await tx.insertUser(kept) }
            #expect(try await store.user(id: kept.id) != nil)
        }
    }

    @Test(arguments: Backend.available)
    func concurrentTransactionsStayWhole(_ backend: Backend) async throws {
        try await withStore(backend) { store in
            // Twenty transactions at once, every third one failing after its writes: the others
            // keep both their rows, the failed ones keep none, whatever the interleaving.
            struct Boom: Error {}
            let users = (0..<20).map { Self.user("c\($0)@x.io") }
            await withTaskGroup(of: Void.self) { group in
                for (index, user) in users.enumerated() {
                    group.addTask {
                        try? await store.transaction { tx in
                            try await tx.insertUser(user)
                            try await tx.insertIdentity(Identity(userID: user.id, provider: .email, subject: user.normalizedEmail!, createdAt: Date()))
                            if index % 3 == 0 { throw Boom() }
                        }
                    }
                }
            }
            for (index, user) in users.enumerated() {
                let stored = try await store.user(id: user.id)
                let identities = try await store.identities(of: user.id)
                if index % 3 == 0 {
                    #expect(stored == nil && identities.isEmpty)
                } else {
                    #expect(stored != nil && identities.count == 1)
                }
            }
        }
    }

    @Test(arguments: Backend.available)
    func signingKeysOneActiveAndRetiredOnesExpire(_ backend: Backend) async throws {
        try await withStore(backend) { store in
            let t0 = Date(unixSeconds: 1_800_000_000)
            func key(_ kid: String, at time: Date) -> SigningKeyRecord {
                SigningKeyRecord(
                    kid: kid, algorithm: "ES256", privateKey: [1, 2, 3, 0, 255], encryption: "none", publicJWK: "{}",
                    status: "active", createdAt: time)
            }
            try await store.insertSigningKey(key("k1", at: t0))
            await #expect(throws: StoreError.self) { try await store.insertSigningKey(key("k2", at: t0)) }
            #expect(try await store.retireSigningKey(kid: "k1", at: t0.addingTimeInterval(10), publishUntil: t0.addingTimeInterval(100)))
            #expect(try await store.retireSigningKey(kid: "k1", at: t0, publishUntil: t0) == false)
            try await store.insertSigningKey(key("k2", at: t0.addingTimeInterval(10)))
            #expect(try await store.signingKeys(publishedAt: t0.addingTimeInterval(50)).map(\.kid) == ["k2", "k1"])
            #expect(try await store.signingKeys(publishedAt: t0.addingTimeInterval(100)).map(\.kid) == ["k2"])
            #expect(try await store.allSigningKeys().map(\.kid) == ["k2", "k1"])
            let stored = try #require(try await store.allSigningKeys().last)
            #expect(stored.privateKey == [1, 2, 3, 0, 255])
            try await store.updateSigningKeyMaterial(kid: "k1", privateKey: [9], encryption: "aes-256-gcm")
            #expect(try await store.allSigningKeys().last?.encryption == "aes-256-gcm")
        }
    }

    @Test(arguments: Backend.available)
    func pingAnswers(_ backend: Backend) async throws {
        try await withStore(backend) { store in
            // The writer answers (SQLite takes and releases its write lock; PostgreSQL a query),
            // outside a transaction and inside one, and the store still writes afterwards.
            await #expect(throws: Never.self) { try await store.ping() }
            let inside = try await store.transaction { tx -> Bool in
                try await tx.ping()
                return true
            }
            #expect(inside)
            let user = User(id: .random(), createdAt: Date(unixSeconds: 1_800_000_000))
            try await store.insertUser(user)
            #expect(try await store.user(id: user.id)?.id == user.id)
        }
    }
}

@Suite struct SQLiteDurabilityTests {
    @Test func committedRowsSurviveReopening() async throws {
        let (url, cleanup) = try await TestDatabase.make(.sqlite)
        defer { Task { await cleanup() } }
        let user = StoreContractTests.user("durable@x.io")
        let first = try await url.open(logger: TestDatabase.logger)
        try await Migrator(database: first).migrate(now: 1)
        try await SQLStore(database: first).insertUser(user)
        await first.shutdown()
        let second = try await url.open(logger: TestDatabase.logger)
        #expect(try await SQLStore(database: second).user(id: user.id) == user)
        let mode = try await second.query("PRAGMA journal_mode")
        #expect(try mode.first?.string("journal_mode") == "wal")
        await second.shutdown()
    }

    @Test func aMissingDirectoryIsAClearError() async {
        await #expect {
            _ = try await DatabaseURL.sqlite(path: "/nonexistent-dir-\(UUID().uuidString)/x.sqlite").open(logger: TestDatabase.logger)
        } throws: { error in
            "\(error)".contains("does not exist")
        }
    }
}

@Suite struct DatabaseURLTests {
    @Test func parsesTheSupportedForms() throws {
        #expect(try DatabaseURL.parse("sqlite:///var/lib/g.sqlite").get() == .sqlite(path: "/var/lib/g.sqlite"))
        #expect(try DatabaseURL.parse("sqlite://g.sqlite").get() == .sqlite(path: "g.sqlite"))
        #expect(try DatabaseURL.parse("postgres://u:p@h:5433/db").get() == .postgres(url: "postgres://u:p@h:5433/db"))
        #expect(DatabaseURL.postgres(url: "postgres://u:secret@h/db").description == "postgres://u:***@h/db")
    }

    @Test(arguments: ["mysql://x", "sqlite://", "postgres:///db", "postgres://h/db?sslmode=sometimes", "nonsense"])
    func refusesOtherForms(_ text: String) {
        #expect(throws: DatabaseURLError.self) { try DatabaseURL.parse(text).get() }
    }

    @Test func numbersPlaceholdersForPostgres() {
        #expect(PostgresDatabase.numberPlaceholders("a = ? AND b IN (?, ?)") == "a = $1 AND b IN ($2, $3)")
    }
}

@Suite struct CIEnvironmentTests {
    /// CI must run the contract suites on PostgreSQL too, never skip it silently.
    @Test func postgresIsConfiguredInCI() {
        if ProcessInfo.processInfo.environment["CI"] != nil {
            #expect(TestDatabase.postgresAdminURL != nil, "CI runs without GATEHOUSE_TEST_POSTGRES_URL")
        }
    }
}
