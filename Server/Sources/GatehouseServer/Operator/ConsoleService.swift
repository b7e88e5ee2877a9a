import Foundation
import GatehouseCore
import GatehouseStore
import GatehouseWire

/// What only the admin console shows: the overview's charts, the user list with its plan
/// filter, a user's page, the keys and the outbox; and the console's own sessions. What the
/// console *does* to accounts is `OperatorService`'s (and `OperatorMailService`'s,
/// `OperatorKeysService`'s), with `by: admin_console` and the operator's browser as the client.
struct ConsoleService: Sendable {
    /// What this use case reads and writes: its transactions see the store through this and no more.
    typealias Stores = any UserStore & IdentityStore & SessionStore & EntitlementStore & PlanLedgerStore & PasskeyStore
        & MFAFactorStore & RecoveryCodeStore & ConsoleStore & SigningKeyStore & OutboxStore

    let store: Stores
    /// Console sessions and the sign-ins' audit rows.
    let unitOfWork: UnitOfWork<Stores>
    let entitlements: Entitlements
    let engine: EntitlementEngine
    let keys: KeyRing
    let preset: Preset
    let clock: any WallClock
    /// This node's calls to the app's hooks, and the labels of the hooks configured (shown even
    /// before their first call).
    let hookHealth: HookHealth
    let hooks: [String]
    /// The overview's counts of a month of rows, kept on this node.
    let overviewCounts: OverviewCounts
    /// How long a filtered page keeps testing accounts (`GATEHOUSE_CONSOLE_SCAN_MILLISECONDS`).
    let scanBudget: Duration

    /// The `by` of the console's audit rows.
    static let actor = "admin_console"
    /// Days the overview charts cover.
    static let overviewDays: Int64 = 30
    /// Accounts the plan mix, trial conversions and a plan filter look at: the newest this many.
    static let planScanLimit = 2_000

    // MARK: Overview

    struct Overview: Sendable {
        /// The month's counts, counted in the background (`OverviewCounts`).
        var counts: OverviewCounts.Seen
        var mail: MailCounts
        /// Background jobs that ran out of attempts: how many, the newest five.
        var failedJobs: FailedJobs
        /// Each configured hook's calls, failures and p99 on this node since it started.
        var hooks: [(label: String, figures: HookHealth.Figures)]
    }

    /// The overview: the last counts (asking for new ones when they are stale), and what is
    /// cheap to read now.
    func overview() async throws -> Overview {
        Overview(
            counts: overviewCounts.seen(), mail: try await store.mailCounts(), failedJobs: try await store.failedJobs(limit: 5),
            hooks: hookFigures())
    }

    /// "Count again": a count starts now, unless one is under way.
    func countOverviewAgain() { _ = overviewCounts.seen(again: true) }

    /// The configured hooks' figures, in the settings' order, then any other label called.
    func hookFigures() -> [(label: String, figures: HookHealth.Figures)] {
        let called = hookHealth.snapshot()
        let labels = hooks + called.keys.filter { !hooks.contains($0) }.sorted()
        return labels.map { (label: $0, figures: called[$0] ?? HookHealth.Figures()) }
    }

    // MARK: Users

    struct UserRow: Sendable {
        var user: User
        var planState: String
        var providers: [String]
    }

    struct UserPage: Sendable {
        var rows: [UserRow]
        /// The cursor of the next page, when there may be one.
        var next: String?
        /// With a plan or provider filter: accounts looked at for this page.
        var scanned: Int
    }

    /// One page of 25, newest first. A plan state or a provider is tested on each account (the
    /// plan is the entitlement engine's answer; the provider, one of the account's identities),
    /// so with either the page looks at accounts 200 at a time, until the page is full, another
    /// batch would not end within `scanBudget` (`scanGoesOn`; one batch at least) or
    /// `planScanLimit` accounts were tested, and offers to go on from where it stopped. A batch
    /// reads only what its filter tests: with a provider, its accounts' identities (one
    /// statement), then the paid sources' rows (a statement a source) of only the accounts that
    /// have it; without one, only the paid sources' rows, and the shown rows' providers are read
    /// once for the page. Read as a condition of the list instead, a provider few accounts use
    /// made the database test every account for a page (issue 65).
    func users(_ filter: UserFilter, planState: String?, provider: String?, cursor: String?) async throws -> UserPage {
        let size = 25
        var before: RowCursor?
        if let cursor, !cursor.isEmpty {
            guard let parsed = RowCursor(cursor) else { throw GatehouseError.invalidRequest("The cursor is not valid.") }
            before = parsed
        }
        var matches: [(user: User, planState: String)] = []
        var providers: [UserID: [Identity]] = [:]
        var scanned = 0
        let now = clock.now
        let scanning = planState != nil || provider != nil
        let started = ContinuousClock.now
        var slowest = Duration.zero
        func answer(next: RowCursor?) async throws -> UserPage {
            if provider == nil { providers = try await store.identities(ofAccounts: matches.map(\.user.id)) }
            let rows = matches.map { UserRow(user: $0.user, planState: $0.planState, providers: (providers[$0.user.id] ?? []).map(\.provider.rawValue)) }
            return UserPage(rows: rows, next: next?.token, scanned: scanned)
        }
        while matches.count < size,
            Self.scanGoesOn(scanned: scanned, elapsed: ContinuousClock.now - started, slowestBatch: slowest, budget: scanBudget)
        {
            let batchStarted = ContinuousClock.now
            defer { slowest = max(slowest, ContinuousClock.now - batchStarted) }
            let batch = scanning ? 200 : size + 1 - matches.count
            let page = try await store.users(matching: filter, before: before, limit: batch)
            var candidates = page
            if let provider {
                let identities = try await store.identities(ofAccounts: page.map(\.id))
                candidates = page.filter { (identities[$0.id] ?? []).contains { $0.provider.rawValue == provider } }
                for user in candidates { providers[user.id] = identities[user.id] }
            }
            // An input for each candidate and no other account: the accounts without one failed the provider.
            let inputs = try await engine.storedInputs(for: candidates, in: store)
            for user in page {
                scanned += 1
                before = RowCursor(createdAt: user.createdAt.unixSeconds, id: user.id.description)
                guard let input = inputs[user.id] else { continue }
                let state = engine.planState(input, at: now)
                guard planState == nil || state == planState else { continue }
                if matches.count == size {
                    // One more match than the page holds: there is a next page, starting after the last row.
                    let last = matches[size - 1].user
                    return try await answer(next: RowCursor(createdAt: last.createdAt.unixSeconds, id: last.id.description))
                }
                matches.append((user, state))
            }
            if page.count < batch { return try await answer(next: nil) }
        }
        // The scan stopped at its time or its limit (or the page filled exactly): go on from where it stopped.
        return try await answer(next: before)
    }

    /// Whether a filtered page tests another batch: always a first one; then none past
    /// `planScanLimit`, and none that would end after `budget` if it took as long as the slowest
    /// so far. A page so answers within about its budget, not its budget plus a batch (at 1M
    /// accounts on PostgreSQL, with the budget at 30 ms, the page's p99 had been 51 ms).
    static func scanGoesOn(scanned: Int, elapsed: Duration, slowestBatch: Duration, budget: Duration) -> Bool {
        if scanned == 0 { return true }
        return scanned < planScanLimit && elapsed + slowestBatch <= budget
    }

    struct UserDetail: Sendable {
        var user: User
        var identities: [Identity]
        var passkeys: [Passkey]
        var factors: [MFAFactor]
        /// What the account holds of each way in and second factor (the catalogue's count).
        var credentials: CredentialInventory
        /// The newest `historyPageSize` sessions before the page's cursor, live and ended.
        var sessions: HistoryPage<Session>
        var entitlements: EntitlementsPayload
        var subscriptions: [SubscriptionRecord]
        /// Promotional grants, revoked and ended ones included.
        var grants: [PlanGrant]
        /// The newest `historyPageSize` rows of the credit ledger before the page's cursor.
        var ledger: HistoryPage<CreditSpend>
        var audit: [AuditEvent]
        var events: [DomainEvent]
    }

    /// Where an account's page starts its histories: nil is the newest rows.
    struct HistoryCursors: Sendable, Equatable {
        var sessions: RowCursor?
        var ledger: RowCursor?
    }

    /// One page of a history an account's page shows (its sessions, its credit ledger): the
    /// rows, where they started and, when there are older ones, where those start. The page
    /// formats and sends 50 rows of each whatever the account holds (read whole, an account with
    /// 134 sessions took 83 ms p50 at 1M accounts: BENCHMARKS.md, issue 65, steps 19 and 20).
    /// Sessions are read in the order of their `(user_id, created_at)` index, so no more than
    /// the page; the ledger has no such index and sorts the account's rows for it.
    struct HistoryPage<Row: Sendable>: Sendable {
        var rows: [Row]
        var from: RowCursor?
        var older: RowCursor?

        /// `read(before, limit)` asked for one row more than a page, to know whether there are older ones.
        init(from before: RowCursor?, cursor: (Row) -> RowCursor, read: (RowCursor?, Int) async throws -> [Row]) async throws {
            let rows = try await read(before, ConsoleService.historyPageSize + 1)
            self.rows = Array(rows.prefix(ConsoleService.historyPageSize))
            self.from = before
            self.older = rows.count > ConsoleService.historyPageSize ? self.rows.last.map(cursor) : nil
        }
    }

    /// Rows of each history an account's page shows at a time (and of its audit trail and events).
    static let historyPageSize = 50

    func user(_ id: String, from cursors: HistoryCursors = HistoryCursors()) async throws -> UserDetail {
        let user = try await find(id)
        let sessions = try await HistoryPage(from: cursors.sessions, cursor: { RowCursor(createdAt: $0.createdAt.unixSeconds, id: $0.id.description) }) {
            try await store.sessions(of: user.id, before: $0, limit: $1)
        }
        let ledger = try await HistoryPage(from: cursors.ledger, cursor: { RowCursor(createdAt: $0.createdAt.unixSeconds, id: UUIDText.lowercase($0.id)) }) {
            try await store.creditLedger(of: user.id, before: $0, limit: $1)
        }
        return UserDetail(
            user: user, identities: try await store.identities(of: user.id), passkeys: try await store.passkeys(of: user.id),
            factors: try await store.mfaFactors(of: user.id), credentials: try await AccountLifecycle.inventory(of: user.id, in: store),
            sessions: sessions, entitlements: try await entitlements.snapshot(user), subscriptions: try await store.subscriptions(of: user.id),
            grants: try await store.grants(of: user.id).sorted { $0.startsAt > $1.startsAt }, ledger: ledger,
            audit: try await store.auditEvents(userID: user.id, event: nil, before: nil, limit: Self.historyPageSize),
            events: try await store.events(after: nil, type: nil, userID: user.id, limit: Self.historyPageSize))
    }

    /// Every signing key, retired ones included (the keys page).
    func signingKeys() async throws -> [SigningKeyRecord] { try await store.allSigningKeys() }

    /// The outbox by state (the mail page).
    func mailCounts() async throws -> MailCounts { try await store.mailCounts() }

    /// The newest 30 messages of the outbox.
    func recentMail() async throws -> [OutboxMessage] { try await store.recentMail(limit: 30) }

    /// The sessions an account has that still work.
    func isLive(_ session: Session) -> Bool { session.isLive(at: clock.now, settings: preset.tokens) }

    /// The grants that still give the plan (the ones to offer Revoke for).
    func isLive(_ grant: PlanGrant) -> Bool { grant.isActive(at: clock.now) }

    /// Every credit a plan of this preset grants, by name.
    var creditNames: [String] {
        Set(engine.settings.plans.values.flatMap(\.credits.keys)).sorted()
    }

    // MARK: Actions

    /// The typed confirmation a deletion asks for: the account's email, or its id when it has none.
    static func confirmationText(_ user: User) -> String { user.email ?? user.id.description }

    /// A sign-in with the admin key: the console session's row (what sign-out deletes) and the
    /// audit row commit together.
    func startSession(_ session: ConsoleCookies.Session, client: ClientInfo) async throws {
        try await unitOfWork.run(client: client) { work in
            try await work.tx.insertConsoleSession(hash: session.hash, expiresAt: session.expiresAt, now: work.now)
            try await work.audit(.adminSignIn, .success, user: nil, details: ["by": Self.actor])
        }
    }

    func sessionIsLive(_ session: ConsoleCookies.Session) async throws -> Bool {
        try await store.consoleSessionIsLive(hash: session.hash, now: clock.now)
    }

    func endSession(_ session: ConsoleCookies.Session) async throws {
        try await unitOfWork.run { work in try await work.tx.deleteConsoleSession(hash: session.hash) }
    }

    /// A sign-in refused (a wrong admin key), kept in the trail.
    func recordRefusedSignIn(client: ClientInfo) async throws {
        try await unitOfWork.audit(.adminSignIn, .failure, client: client, details: ["by": Self.actor])
    }

    /// An action the console refused before doing anything (a typed confirmation that does not
    /// match): shown on the page, never an API error code.
    struct Refusal: Error {
        var code: String
        var message: String
        var status = 422
    }

    private func find(_ id: String) async throws -> User {
        try await UserReference(id).resolve(in: store)
    }
}
