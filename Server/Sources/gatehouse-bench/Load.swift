import Crypto
import Foundation
import GatehouseCore
import GatehouseServer
import GatehouseStore
import GatehouseWire
import Logging

/// `gatehouse-bench load DATABASE_URL ACCOUNTS` (issue 65): fills a database straight through the
/// store's own statements (not through HTTP, which would spend a password hash per account) with
/// accounts shaped like a year of a real app's, and prints one JSON line: the time it took, the
/// rows of each table and the database's size.
///
/// Per account, on average: one or two identities (email, Apple, Google, phone; anonymous
/// accounts none), two sessions (one live, one signed out; anonymous accounts one) with about ten
/// refresh tokens in their rotated chains, twelve audit rows and three events spread over the
/// year, and in some accounts a passkey, a TOTP factor, usage, credit spends, an App Store
/// subscription, a Stripe customer, a grant, an OpenID consent and a throttle window. Email
/// accounts sign in with the password `BENCH_LOAD_PASSWORD` (default `load-password-1`) as
/// `load<N>@example.com`. Sessions, refresh tokens, audit rows and events are written table by
/// table in the order of their times, as a server appends them. The same run on the same URL
/// adds nothing twice: it refuses a database that already holds loaded accounts. On SQLite the
/// writer's page cache is `BENCH_LOAD_SQLITE_CACHE_MIB` (default 4096).
extension Bench {
    /// Accounts per transaction.
    static let loadBatch = 250

    static func load(url text: String, accounts: Int) async throws {
        guard case .success(let url) = DatabaseURL.parse(text) else { throw LoadError("not a database URL: \(text)") }
        var logger = Logger(label: "gatehouse-bench.load")
        logger.logLevel = .warning
        try await Operator.withDatabase(url, logger: logger, poolSize: 8) { database in
            let (store, hash) = try await prepare(database)
            let now = Date()
            let started = ContinuousClock.now
            _ = try await fill(store, accounts: 0..<accounts, hash: hash, now: now)
            let seconds = milliseconds(ContinuousClock.now - started) / 1000
            var rows: [String: Int] = [:]
            for table in LoadShape.tables {
                rows[table] = Int(try await database.query("SELECT COUNT(*) AS n FROM \(table)").first?.int("n") ?? 0)
            }
            let bytes: Int
            switch url {
            case .sqlite(let path):
                bytes = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0
            case .postgres:
                bytes = Int(try await database.query("SELECT pg_database_size(current_database()) AS n").first?.int("n") ?? 0)
            }
            print(json([
                "benchmark": "load", "database": database.dialect == .postgres ? "postgres" : "sqlite", "accounts": accounts,
                "seconds": (seconds * 10).rounded() / 10, "accounts_per_second": (Double(accounts) / seconds).rounded(),
                "database_mib": (Double(bytes) / 1_048_576 * 10).rounded() / 10, "rows": rows,
            ]))
        }
    }

    /// Migrates `database`, refuses one already loaded, and answers the loader's store (plain
    /// inserts batched) and the hash of the accounts' password.
    static func prepare(_ database: any SQLDatabase) async throws -> (SQLStore, String) {
        try await Migrator(database: database).migrate(now: Date().unixSeconds)
        if database.dialect == .sqlite {
            // The writer's page cache (SQLite's default is 2 MB): the indexes on random ids
            // outgrow it early, and each insert then reads its index pages back from the file.
            // Loading 921k accounts took 88 minutes with the default. A loader's setting only:
            // the server keeps its own.
            let mebibytes = Int(ProcessInfo.processInfo.environment["BENCH_LOAD_SQLITE_CACHE_MIB"] ?? "") ?? 4096
            try await database.query("PRAGMA cache_size = -\(mebibytes * 1024)")
        }
        let store = SQLStore(database: BatchedInserts(database: database))
        if try await store.oauthClient(id: "load-client") != nil {
            throw LoadError("this database already holds loaded accounts")
        }
        let password = ProcessInfo.processInfo.environment["BENCH_LOAD_PASSWORD"] ?? "load-password-1"
        let hasher = try PasswordHasher(parameters: argon2Parameters(), threads: 1)
        let hash = try await hasher.hash(password)
        await hasher.shutdown()
        let client = OAuthClient(
            id: "load-client", name: "Loaded client", secretHash: nil, isPublic: true, firstParty: false,
            redirectURIs: ["https://app.example.com/callback"], postLogoutRedirectURIs: [], scopes: ["openid", "email"], audience: nil,
            initiateLoginURI: nil, rateLimitPerMinute: 600, createdAt: Date())
        try await store.insertOAuthClient(client)
        return (store, hash)
    }

    /// Loads the accounts of `indices` as of `now`, and answers their ids in index order: first
    /// each account's own rows, `loadBatch` accounts to a transaction (a few at once on
    /// PostgreSQL); then the rows a server appends as time passes (sessions, refresh tokens, the
    /// audit trail, events) in the order of their times (``writeInTimeOrder(_:into:)``).
    static func fill(_ store: SQLStore, accounts indices: Range<Int>, hash: String, now: Date) async throws -> [UserID] {
        // SQLite has one writer; PostgreSQL takes a few transactions at once.
        let lanes = store.dialect == .postgres ? 4 : 1
        let batches = stride(from: indices.lowerBound, to: indices.upperBound, by: loadBatch).map { $0..<min($0 + loadBatch, indices.upperBound) }
        let accounts = try await withThrowingTaskGroup(of: (Int, [LoadedAccount]).self) { group in
            var next = batches.makeIterator()
            func add() {
                guard let range = next.next() else { return }
                group.addTask {
                    try await store.transaction { tx in
                        // The plain inserts first, sent together; then the upserts, each its own statement.
                        var loaded: [LoadedAccount] = []
                        for index in range { loaded.append(try await loadAccount(index, into: tx, hash: hash, now: now)) }
                        for account in loaded { try await loadUpserts(account.index, of: account.user, into: tx, now: now) }
                        return (range.lowerBound, loaded)
                    }
                }
            }
            for _ in 0..<lanes { add() }
            var loaded: [(Int, [LoadedAccount])] = []
            while let done = try await group.next() {
                loaded.append(done)
                add()
            }
            return loaded.sorted { $0.0 < $1.0 }.flatMap(\.1)
        }
        try await writeInTimeOrder(accounts, into: store)
        return accounts.map(\.user.id)
    }

    /// One account and everything it has after its time with the app, but for what
    /// ``loadUpserts(_:of:into:now:)`` adds and the rows of its times, which are answered for
    /// ``writeInTimeOrder(_:into:)``.
    static func loadAccount(_ index: Int, into tx: any GatehouseStore, hash: String, now: Date) async throws -> LoadedAccount {
        var random = LoadShape.Random(seed: UInt64(index))
        let day: TimeInterval = 86_400
        let created = now - Double(random.below(365)) * day - Double(random.below(86_400))
        let kind = LoadShape.Kind(index)
        let id = UserID.random()
        var user = User(id: id, isAnonymous: kind == .anonymous, handle: kind == .anonymous ? nil : "load\(index)", createdAt: created)
        var identities: [Identity] = []
        let email = "load\(index)@example.com"
        switch kind {
        case .email:
            (user.email, user.normalizedEmail, user.emailVerifiedAt) = (email, email, created + 60)
            (user.passwordHash, user.passwordChangedAt) = (hash, created)
            identities.append(Identity(userID: id, provider: .email, subject: email, email: email, createdAt: created))
            if index % 7 == 0 {
                identities.append(Identity(userID: id, provider: .google, subject: "google-\(index)", email: email, createdAt: created + day))
            }
        case .apple:
            (user.email, user.normalizedEmail, user.emailVerifiedAt) = (email, email, created)
            identities.append(Identity(userID: id, provider: .apple, subject: "apple-\(index)", email: email, isPrivateRelay: index % 3 == 0, createdAt: created))
        case .google:
            (user.email, user.normalizedEmail, user.emailVerifiedAt) = (email, email, created)
            identities.append(Identity(userID: id, provider: .google, subject: "google-\(index)", email: email, createdAt: created))
        case .phone:
            identities.append(Identity(userID: id, provider: .phone, subject: LoadShape.phone(index), createdAt: created))
        case .anonymous:
            break
        }
        if kind == .phone || (kind == .email && index % 5 == 0) {
            (user.phone, user.phoneVerifiedAt) = (LoadShape.phone(index), created + 120)
        }
        try await tx.insertUser(user)
        for identity in identities { try await tx.insertIdentity(identity) }
        var account = LoadedAccount(index: index, user: user, provider: kind == .anonymous ? .anonymous : identities.first?.provider ?? .email)

        // Sessions: one still in use with its chain of seven tokens, one signed out with four.
        let chains = kind == .anonymous ? [3] : [7, 4]
        for (number, length) in chains.enumerated() {
            let opened = created + Double(random.below(Int(max(1, now.timeIntervalSince(created)))))
            let live = number == 0
            let lastActive = live ? now - Double(random.below(7 * 86_400)) : opened + Double(length) * 3_600
            account.sessions.append(
                Session(
                    userID: id, provider: account.provider, createdAt: opened, lastActiveAt: max(opened, lastActive),
                    revokedAt: live ? nil : opened + Double(length) * 3_600, revokedReason: live ? nil : "logout", userAgent: "Loaded/1.0",
                    ipAddress: "10.\(index % 250).\(number).1", method: account.provider.rawValue))
            account.chains.append(length)
        }
        // A year of the audit trail.
        for _ in 0..<12 { account.audits.append(created + Double(random.below(Int(max(1, now.timeIntervalSince(created)))))) }

        if index % 10 == 1 {
            try await tx.insertPasskey(
                Passkey(
                    userID: id, credentialID: random.bytes(32), publicKey: random.bytes(77), signCount: 0, backupEligible: true, backedUp: true,
                    transports: ["internal", "hybrid"], aaguid: random.bytes(16), name: "iPhone", createdAt: created + day))
            account.passkeyAddedAt = created + day
        }
        if kind == .email, index % 20 == 4 {
            try await tx.insertMFAFactor(
                MFAFactor(userID: id, name: "Authenticator", secret: random.bytes(20), encryption: "none", createdAt: created + day, confirmedAt: created + day))
        }
        if index % 5 == 2 {
            let period = LoadShape.monthStart(now)
            for spend in 0..<2 {
                try await tx.insertCreditSpend(
                    CreditSpend(
                        userID: id, credit: "practice", action: "practice_saved_flow", subject: nil, idempotencyKey: "load-\(index)-\(spend)",
                        periodStart: period, createdAt: now - 7_200))
            }
        }
        if index % 100 == 5 {
            try await tx.insertGrant(
                PlanGrant(userID: id, tier: nil, startsAt: now - day, until: now + 30 * day, reason: "support", createdBy: "admin_key"))
        }
        return account
    }

    /// What the store writes for an account by upsert (usage, an App Store subscription, a Stripe
    /// customer, an OpenID consent, a throttle window): each its own statement.
    static func loadUpserts(_ index: Int, of user: User, into tx: any GatehouseStore, now: Date) async throws {
        let day: TimeInterval = 86_400
        let id = user.id
        let created = user.createdAt
        if index % 5 == 2 {
            let period = LoadShape.monthStart(now)
            for call in 0..<3 {
                _ = try await tx.addUsage(
                    UsageRecord(userID: id, meter: "api_calls", amount: 1, idempotencyKey: "load-\(index)-\(call)", periodStart: period, createdAt: now - 3_600),
                    limit: nil)
            }
        }
        if index % 30 == 3 {
            _ = try await tx.saveSubscription(
                SubscriptionRecord(
                    originalTransactionID: "load-\(index)", userID: id, productID: "pro_monthly", environment: "Production", status: .active,
                    expiresAt: now + 20 * day, willRenew: true, introductory: false, signedAt: now - 10 * day, updatedAt: now - 10 * day))
        }
        if index % 50 == 4 { _ = try await tx.saveStripeCustomer(userID: id, customerID: "cus_load\(index)", at: created + day) }
        if index % 20 == 6 {
            try await tx.saveConsent(OAuthConsent(userID: id, clientID: "load-client", scopes: ["openid", "email"], grantedAt: created + day))
        }
        if index % 10 == 7, let normalized = user.normalizedEmail {
            _ = try await tx.hitRateLimit(key: "login:account:\(normalized)", windowStart: now.unixSeconds - 3_600)
        }
    }
}

/// What a loaded account is made of.
enum LoadShape {
    /// The tables the load report counts.
    static let tables = [
        "users", "identities", "sessions", "refresh_tokens", "audit_log", "events", "passkeys", "mfa_factors", "usage_records",
        "credit_ledger", "subscriptions", "stripe_customers", "plan_grants", "oauth_consents", "rate_limits",
    ]

    enum Kind: Equatable {
        case email, apple, google, phone, anonymous

        /// Six in ten by email and password, one each by Apple, Google, phone and anonymous.
        init(_ index: Int) {
            switch index % 10 {
            case 0: self = .anonymous
            case 1: self = .apple
            case 2: self = .google
            case 3: self = .phone
            default: self = .email
            }
        }
    }

    static func phone(_ index: Int) -> String { "+1555" + String(format: "%07d", index % 10_000_000) }

    /// The UTC month holding `date`, as the server counts a monthly meter's window and a
    /// calendar-month credit period.
    static func monthStart(_ date: Date) -> Date {
        MeterSettings(action: "", context: "", period: "month").window(at: date).start
    }

    /// SplitMix64: the same account of the same index gets the same shape on every run.
    struct Random {
        var state: UInt64
        init(seed: UInt64) { state = seed &* 0x9E37_79B9_7F4A_7C15 }
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
        mutating func below(_ bound: Int) -> Int { Int(next() % UInt64(max(1, bound))) }
        mutating func bytes(_ count: Int) -> [UInt8] { (0..<count).map { _ in UInt8(truncatingIfNeeded: next()) } }
    }
}

struct LoadError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
