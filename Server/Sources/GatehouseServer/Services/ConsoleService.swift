import Foundation
import GatehouseCore
import GatehouseStore
import GatehouseWire

/// What the admin console shows and does. Reads go to the stores; every action is a use case
/// that writes its audit row with `by: admin_console` (the operator signed in with the admin key)
/// and the operator's browser as the client.
struct ConsoleService: Sendable {
    let store: any GatehouseStore
    let unitOfWork: UnitOfWork
    let users: UserAdminService
    let entitlements: EntitlementService
    let engine: EntitlementEngine
    let mail: AccountMail
    let keys: KeyRing
    let testMail: TestMailService
    let metrics: ServerMetrics
    let preset: Preset
    let clock: any WallClock
    let retiredKeyPublishSeconds: Int

    /// The `by` of the console's audit rows.
    static let actor = "admin_console"
    /// Days the overview charts cover.
    static let overviewDays: Int64 = 30
    /// Accounts the plan mix, trial conversions and a plan filter look at: the newest this many.
    static let planScanLimit = 2_000

    // MARK: Overview

    struct Overview: Sendable {
        var days: [DailyActivity]
        /// Accounts by plan state among the newest `sampled`.
        var planMix: [(state: String, count: Int)]
        var sampled: Int
        /// Of the sampled accounts: those that started a server trial, and those of them now paying.
        var trialsStarted: Int
        var trialsConverted: Int
        var mail: MailCounts
    }

    func overview() async throws -> Overview {
        let today = clock.now.unixSeconds / 86_400
        let days = try await store.dailyActivity(from: today - Self.overviewDays + 1, through: today)
        var mix: [String: Int] = [:]
        var sampled = 0, started = 0, converted = 0
        var cursor: UserCursor?
        let now = clock.now
        while sampled < Self.planScanLimit {
            let page = try await store.users(matching: UserFilter(), before: cursor, limit: 200)
            for user in page {
                let state = try await planState(of: user, at: now)
                mix[state, default: 0] += 1
                if user.trialStartedAt != nil {
                    started += 1
                    if state == PlanState.pro.rawValue || state == PlanState.proGrace.rawValue { converted += 1 }
                }
            }
            sampled += page.count
            guard page.count == 200, let last = page.last else { break }
            cursor = UserCursor(createdAt: last.createdAt.unixSeconds, id: last.id.description)
        }
        let order = PlanState.all.map(\.rawValue)
        let planMix = mix.sorted { (order.firstIndex(of: $0.key) ?? 99, $0.key) < (order.firstIndex(of: $1.key) ?? 99, $1.key) }
            .map { (state: $0.key, count: $0.value) }
        return Overview(
            days: days, planMix: planMix, sampled: sampled, trialsStarted: started, trialsConverted: converted,
            mail: try await store.mailCounts())
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
        /// With a plan filter: accounts looked at for this page (the filter runs the engine).
        var scanned: Int
    }

    /// One page of 25, newest first. A plan-state filter is the entitlement engine's answer, so
    /// it looks at up to `planScanLimit` accounts per page and offers to go on from there.
    func users(_ filter: UserFilter, planState: String?, cursor: String?) async throws -> UserPage {
        let size = 25
        var before: UserCursor?
        if let cursor, !cursor.isEmpty {
            guard let parsed = UserCursor(cursor) else { throw GatehouseError.invalidRequest("The cursor is not valid.") }
            before = parsed
        }
        var rows: [UserRow] = []
        var scanned = 0
        let now = clock.now
        while rows.count < size, scanned < Self.planScanLimit {
            let batch = planState == nil ? size + 1 - rows.count : 200
            let page = try await store.users(matching: filter, before: before, limit: batch)
            for user in page {
                scanned += 1
                before = UserCursor(createdAt: user.createdAt.unixSeconds, id: user.id.description)
                let state = try await self.planState(of: user, at: now)
                guard planState == nil || state == planState else { continue }
                if rows.count == size {
                    // One more match than the page holds: there is a next page, starting after the last row.
                    let last = rows[size - 1].user
                    return UserPage(rows: rows, next: UserCursor(createdAt: last.createdAt.unixSeconds, id: last.id.description).token, scanned: scanned)
                }
                rows.append(UserRow(user: user, planState: state, providers: try await store.identities(of: user.id).map(\.provider.rawValue)))
            }
            if page.count < batch { return UserPage(rows: rows, next: nil, scanned: scanned) }
        }
        // The scan stopped at its limit (or the page filled exactly): go on from where it stopped.
        return UserPage(rows: rows, next: before?.token, scanned: scanned)
    }

    struct UserDetail: Sendable {
        var user: User
        var identities: [Identity]
        var passkeys: [Passkey]
        var factors: [MFAFactor]
        /// What the account holds of each way in and second factor (the catalogue's count).
        var credentials: CredentialInventory
        var sessions: [Session]
        var entitlements: EntitlementsPayload
        var subscriptions: [SubscriptionRecord]
        var ledger: [CreditSpend]
        var audit: [AuditEvent]
        var events: [DomainEvent]
    }

    func user(_ id: String) async throws -> UserDetail {
        let user = try await find(id)
        return UserDetail(
            user: user, identities: try await store.identities(of: user.id), passkeys: try await store.passkeys(of: user.id),
            factors: try await store.mfaFactors(of: user.id), credentials: try await AccountLifecycle.inventory(of: user.id, in: store),
            sessions: try await store.sessions(of: user.id).sorted { $0.createdAt > $1.createdAt },
            entitlements: try await entitlements.snapshot(user), subscriptions: try await store.subscriptions(of: user.id),
            ledger: try await store.creditLedger(of: user.id).sorted { $0.createdAt > $1.createdAt },
            audit: try await store.auditEvents(userID: user.id, event: nil, before: nil, limit: 50),
            events: try await store.events(after: nil, type: nil, userID: user.id, limit: 50))
    }

    /// The entitlement engine's plan state of `user` now (no credit sums: the state needs none).
    private func planState(of user: User, at now: Date) async throws -> String {
        engine.planState(try await engine.storedInput(for: user, in: store), at: now)
    }

    /// The sessions an account has that still work.
    func isLive(_ session: Session) -> Bool { session.isLive(at: clock.now, settings: preset.tokens) }

    /// Every credit a plan of this preset grants, by name.
    var creditNames: [String] {
        Set(engine.settings.plans.values.flatMap(\.credits.keys)).sorted()
    }

    // MARK: Actions

    func revokeSession(_ userID: String, session id: String, client: ClientInfo) async throws {
        let user = try await find(userID)
        guard let sessionID = SessionID(id), let session = try await store.session(id: sessionID), session.userID == user.id, isLive(session) else {
            throw GatehouseError.notFound("No such session.")
        }
        try await unitOfWork.run(client: client) { work in
            _ = try await work.tx.revokeSession(sessionID, reason: "revoked_by_admin", at: work.now)
            try await work.audit(.sessionRevoked, user: user.id, session: sessionID, details: ["by": Self.actor])
        }
    }

    func revokeAllSessions(_ userID: String, client: ClientInfo) async throws -> Int {
        let user = try await find(userID)
        return try await unitOfWork.run(client: client) { work in
            let ended = try await work.tx.revokeSessions(of: user.id, keeping: nil, reason: "revoked_by_admin", at: work.now)
            for session in ended {
                try await work.audit(.sessionRevoked, user: user.id, session: session, details: ["by": Self.actor])
            }
            return ended.count
        }
    }

    func setPlan(_ userID: String, plan: String?, reason: String, client: ClientInfo) async throws {
        _ = try await users.setPlanOverride(userID, plan: plan, by: Self.actor, reason: try Self.reason(reason), client: client)
    }

    /// Gives `amount` more of a credit for the current period: a negative spend in the ledger,
    /// under its own key, so balances and the spend path need nothing new.
    func grantCredits(_ userID: String, credit: String, amount: Int, reason: String, client: ClientInfo) async throws {
        let user = try await find(userID)
        let reason = try Self.reason(reason)
        guard creditNames.contains(credit) else { throw GatehouseError.invalidRequest("No plan of this app grants the credit '\(credit)'.") }
        guard (1...10_000).contains(amount) else { throw GatehouseError.invalidRequest("Grant between 1 and 10000 credits.") }
        try await unitOfWork.run(client: client) { work in
            try await work.tx.lockUser(user.id)
            let input = try await engine.storedInput(for: user, in: work.tx)
            try await work.tx.insertCreditSpend(
                CreditSpend(
                    userID: user.id, credit: credit, amount: -amount, action: "admin_grant", subject: reason,
                    idempotencyKey: "admin_grant:" + UUID().uuidString.lowercased(), periodStart: engine.creditPeriod(input, at: work.now).start,
                    createdAt: work.now))
            try await work.audit(
                .creditsGranted, user: user.id, details: ["by": Self.actor, "credit": credit, "amount": String(amount), "reason": reason])
        }
    }

    func disable(_ userID: String, reason: String, client: ClientInfo) async throws {
        _ = try await users.disable(userID, reason: try Self.reason(reason), by: Self.actor, client: client)
    }

    func enable(_ userID: String, client: ClientInfo) async throws {
        _ = try await users.enable(userID, by: Self.actor, client: client)
    }

    /// `password_reset`, `magic_link` or `verification`: the same mail the person could ask
    /// for, queued now (the operator's request skips the per-address waits, not the link's rules).
    func sendMail(_ userID: String, kind: String, client: ClientInfo) async throws {
        let user = try await find(userID)
        guard let email = user.email else { throw GatehouseError.invalidRequest("This account has no email address.") }
        try await unitOfWork.run(client: client) { work in
            switch kind {
            case "verification":
                guard !user.emailVerified else {
                    throw GatehouseError(status: 409, code: .alreadyVerified, message: "This address is already verified.")
                }
                try await mail.queueVerification(work, user: user)
            case "password_reset", "magic_link":
                // Only the ways in this app offers: a link to a method it turned off would not work.
                guard kind == "magic_link" ? preset.signInMethods.magicLink : preset.signInMethods.emailPassword else {
                    throw GatehouseError.invalidRequest("This app does not offer \(kind == "magic_link" ? "sign-in links" : "passwords").")
                }
                try await mail.queueRequest(work, kind: kind, email: email)
            default:
                throw GatehouseError.invalidRequest("Unknown mail '\(kind)'.")
            }
            try await work.audit(.adminMail, user: user.id, details: ["by": Self.actor, "kind": kind])
        }
    }

    /// Deletes the account when `confirmation` is exactly its email (or its id when it has none).
    func delete(_ userID: String, confirmation: String, client: ClientInfo) async throws {
        let user = try await find(userID)
        guard confirmation == Self.confirmationText(user) else {
            throw Refusal(code: "confirmation_mismatch", message: "Type \(Self.confirmationText(user)) exactly to delete this account.")
        }
        try await users.delete(user.id.description, by: Self.actor, client: client)
    }

    static func confirmationText(_ user: User) -> String { user.email ?? user.id.description }

    func rotateKeys(confirmation: String, client: ClientInfo) async throws {
        guard confirmation == "rotate" else {
            throw Refusal(code: "confirmation_mismatch", message: "Type rotate to rotate the signing key.")
        }
        let (retired, active) = try await keys.rotate(keepPublishedFor: retiredKeyPublishSeconds)
        metrics.keyRotation()
        try await unitOfWork.audit(.signingKeyRotated, .success, client: client, details: ["by": Self.actor, "retired_kid": retired, "kid": active])
    }

    func sendTestMail(to address: String, client: ClientInfo) async throws {
        _ = try await testMail.send(to: address)
        try await unitOfWork.audit(.adminMail, .success, client: client, details: ["by": Self.actor, "kind": "test"])
    }

    /// A console session begins (its row: what sign-out deletes).
    func startSession(_ session: ConsoleCookies.Session) async throws {
        try await store.insertConsoleSession(hash: session.hash, expiresAt: session.expiresAt, now: clock.now)
    }

    func sessionIsLive(_ session: ConsoleCookies.Session) async throws -> Bool {
        try await store.consoleSessionIsLive(hash: session.hash, now: clock.now)
    }

    func endSession(_ session: ConsoleCookies.Session) async throws {
        try await store.deleteConsoleSession(hash: session.hash)
    }

    /// A sign-in with the admin key, kept in the trail whether it worked or not.
    func recordSignIn(succeeded: Bool, client: ClientInfo) async throws {
        try await unitOfWork.audit(.adminSignIn, succeeded ? .success : .failure, client: client, details: ["by": Self.actor])
    }

    /// An action the console refused before doing anything (a typed confirmation that does not
    /// match): shown on the page, never an API error code.
    struct Refusal: Error {
        var code: String
        var message: String
        var status = 422
    }

    static func reason(_ text: String) throws -> String {
        let reason = text.trimmingCharacters(in: .whitespacesAndNewlines)
        guard (1...500).contains(reason.count) else { throw GatehouseError.invalidRequest("Give a reason of 1 to 500 characters.") }
        return reason
    }

    private func find(_ id: String) async throws -> User {
        guard let userID = UserID(id), let user = try await store.user(id: userID) else {
            throw GatehouseError.notFound("No such user.")
        }
        return user
    }
}
