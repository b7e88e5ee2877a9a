import Foundation
import GatehouseCore
import GatehouseStore
import GatehouseWire

/// What an operator does to accounts, on every operator surface: the admin API
/// (`AdminController`), the console (`ConsoleController`) and the `gatehouse users` commands
/// are presenters over it. One way to name an account (`UserReference`), one rule for a
/// reason (`OperatorReason`), one paging (`PageQuery`), one audit and event query. Every
/// action writes its audit row with `by` (the tool: `operator` for the API and the CLI,
/// `admin_console` for the console) and the operator's client when there is one.
public struct OperatorService: Sendable {
    /// What this use case reads and writes: its transactions see the store through this and no more.
    typealias Stores = any UserStore & IdentityStore & ProfileStore & EventStore & SessionStore & SessionAssuranceStore & AuditStore
        & EntitlementStore & PlanLedgerStore & PasskeyStore & MFAFactorStore & RecoveryCodeStore & ConsoleStore & EmailTokenStore
        & AccountPageStore

    let store: Stores
    /// Records `user.deleted` and the like (and queues their webhooks and Apple revocations;
    /// the server's job worker delivers them, also when the CLI queued them).
    let unitOfWork: UnitOfWork<Stores>
    let lifecycle: AccountLifecycle
    let removal: FactorRemoval
    let engine: EntitlementEngine
    let tokens: TokenSettings
    let clock: any WallClock

    /// The `by` of the API's and the CLI's audit rows.
    public static let operatorActor = "operator"

    // MARK: Accounts

    /// One page, newest first. `cursor` is the `next_cursor` of the previous page.
    public func list(search: String?, cursor: String?, limit: Int) async throws -> AdminUserList {
        var before: RowCursor?
        if let cursor, !cursor.isEmpty {
            guard let parsed = RowCursor(cursor) else { throw GatehouseError.invalidRequest("The cursor is not valid.") }
            before = parsed
        }
        guard (1...200).contains(limit) else { throw GatehouseError.invalidRequest("The limit must be between 1 and 200.") }
        let users = try await store.users(search: search, before: before, limit: limit + 1)
        let page = Array(users.prefix(limit))
        // The page's identities and passkeys in a statement per table (per 50 accounts), not per account.
        let identities = try await store.identities(ofAccounts: page.map(\.id))
        let passkeys = try await store.passkeys(ofAccounts: page.map(\.id))
        let result = page.map { adminView($0, identities: identities[$0.id] ?? [], passkeys: passkeys[$0.id] ?? []) }
        let next = users.count > limit ? page.last.map { RowCursor(createdAt: $0.createdAt.unixSeconds, id: $0.id.description).token } : nil
        return AdminUserList(users: result, nextCursor: next)
    }

    /// A user by id or by email.
    public func show(_ reference: String) async throws -> AdminUser {
        let user = try await find(reference)
        var view = try await adminView(user)
        view.credentials = try await AccountLifecycle.inventory(of: user.id, in: store).byName
        return view
    }

    /// The account an operator names (`UserReference`: an id or an address).
    func find(_ reference: String) async throws -> User {
        try await UserReference(reference).resolve(in: store)
    }

    public func disable(
        _ reference: String, reason text: String?, required: Bool = false, by actor: String = operatorActor, client: ClientInfo? = nil
    ) async throws -> AdminUser {
        let user = try await find(reference)
        let reason = try OperatorReason.read(text, required: required)
        let now = clock.now
        try await unitOfWork.run(client: client) { work in
            _ = try await work.tx.setDisabled(user.id, at: user.disabledAt ?? now, reason: reason ?? user.disabledReason, now: now)
            // Disabling ends every session, not only the next refresh.
            _ = try await work.tx.revokeSessions(of: user.id, keeping: nil, reason: .accountDisabled, at: now)
            var details = ["by": actor]
            details["reason"] = reason
            try await work.audit(.accountDisabled, user: user.id, details: details)
        }
        return try await show(user.id.description)
    }

    public func enable(_ reference: String, by actor: String = operatorActor, client: ClientInfo? = nil) async throws -> AdminUser {
        let user = try await find(reference)
        try await unitOfWork.run(client: client) { work in
            _ = try await work.tx.setDisabled(user.id, at: nil, reason: nil, now: work.now)
            try await work.audit(.accountEnabled, user: user.id, details: ["by": actor])
        }
        return try await show(user.id.description)
    }

    /// Deletes an account as the operator: no proof asked; Apple's token is revoked and a
    /// `user.deleted` event recorded.
    public func delete(_ reference: String, by actor: String = operatorActor, client: ClientInfo? = nil) async throws {
        let user = try await find(reference)
        try await unitOfWork.run(client: client) { work in
            guard try await lifecycle.delete(work.narrowed { $0 }, user.id, reason: "operator") else {
                throw GatehouseError.notFound("No user matches '\(reference)'.")
            }
            try await work.audit(.accountDeleted, user: user.id, details: ["by": actor])
        }
    }

    /// Sets or clears the plan override the entitlement engine honours.
    public func setPlanOverride(
        _ reference: String, plan: String?, by actor: String = operatorActor, reason text: String? = nil, required: Bool = false,
        client: ClientInfo? = nil
    ) async throws -> AdminUser {
        let user = try await find(reference)
        let reason = try OperatorReason.read(text, required: required)
        // Any state but `guest` (which needs no account).
        if let plan, PlanState(known: plan) == nil || PlanState(known: plan) == .guest {
            throw GatehouseError.invalidRequest("The plan must be free, trial, pro, pro_grace or null.")
        }
        try await unitOfWork.run(client: client) { work in
            try await work.tx.setPlanOverride(user.id, plan, now: work.now)
            var details = ["plan": plan ?? "none", "by": actor]
            details["reason"] = reason
            try await work.audit(.planOverride, user: user.id, details: details)
            try await work.record(.planChanged, user: user.id, data: ["override": plan ?? "none"])
        }
        return try await show(user.id.description)
    }

    // MARK: Sessions, credits, second factors

    /// Ends one live session of the account; 404 for any other.
    func revokeSession(_ reference: String, session id: String, by actor: String, client: ClientInfo?) async throws {
        let user = try await find(reference)
        guard let sessionID = SessionID(id), let session = try await store.session(id: sessionID), session.userID == user.id,
            session.isLive(at: clock.now, settings: tokens)
        else {
            throw GatehouseError.notFound("No such session.")
        }
        try await unitOfWork.run(client: client) { work in
            _ = try await work.tx.revokeSession(sessionID, reason: .revokedByAdmin, at: work.now)
            try await work.audit(.sessionRevoked, user: user.id, session: sessionID, details: ["by": actor])
        }
    }

    /// Ends every live session of the account; how many.
    func revokeAllSessions(_ reference: String, by actor: String, client: ClientInfo?) async throws -> Int {
        let user = try await find(reference)
        return try await unitOfWork.run(client: client) { work in
            let ended = try await work.tx.revokeSessions(of: user.id, keeping: nil, reason: .revokedByAdmin, at: work.now)
            for session in ended {
                try await work.audit(.sessionRevoked, user: user.id, session: session, details: ["by": actor])
            }
            return ended.count
        }
    }

    /// Every credit a plan of this preset grants, by name.
    var creditNames: [String] {
        Set(engine.settings.plans.values.flatMap(\.credits.keys)).sorted()
    }

    /// Gives `amount` more of a credit for the current period: a negative spend in the ledger,
    /// under its own key, so balances and the spend path need nothing new.
    func grantCredits(_ reference: String, credit: String, amount: Int, reason text: String?, by actor: String, client: ClientInfo?) async throws {
        let user = try await find(reference)
        let reason = try OperatorReason.required(text)
        guard creditNames.contains(credit) else { throw GatehouseError.invalidRequest("No plan of this app grants the credit '\(credit)'.") }
        guard (1...10_000).contains(amount) else { throw GatehouseError.invalidRequest("Grant between 1 and 10000 credits.") }
        try await unitOfWork.run(client: client) { work in
            try await work.tx.lockUser(user.id)
            let input = try await engine.storedInput(for: user, in: work.tx)
            try await work.tx.insertCreditSpend(
                CreditSpend(
                    userID: user.id, credit: credit, amount: -amount, action: "admin_grant", subject: reason,
                    idempotencyKey: "admin_grant:" + UUIDText.lowercase(SecureRandom.uuid()), periodStart: engine.creditPeriod(input, at: work.now).start,
                    createdAt: work.now))
            try await work.audit(
                .creditsGranted, user: user.id, details: ["by": actor, "credit": credit, "amount": String(amount), "reason": reason])
        }
    }

    /// `GET /admin/v1/users/{id}/mfa/factors`: a user's factors (never their secrets).
    func factors(_ reference: String) async throws -> MFAFactorsResponse {
        let user = try await find(reference)
        return MFAFactorsResponse(factors: try await store.mfaFactors(of: user.id).map(MFAService.payload))
    }

    /// `DELETE /admin/v1/users/{id}/mfa/factors/{factor}`: support's removal, for a person who
    /// lost every factor and recovery code (after checking who they are); audited with `by`
    /// and mailed to the user.
    func removeFactor(_ reference: String, factor: String, by actor: String = operatorActor, client: ClientInfo? = nil) async throws {
        let user = try await find(reference)
        guard let id = UUID(uuidString: factor) else { throw MFAService.notFound }
        try await unitOfWork.run(client: client) { work in
            try await removal.remove(work.narrowed { $0 }, user, factor: id, by: actor)
        }
    }

    // MARK: The audit trail and the event feed

    /// A page of rows and whether more follow it.
    struct Page<Row: Sendable>: Sendable {
        var rows: [Row]
        var more: Bool
    }

    /// The audit trail, newest first, before the page's cursor; optionally one user's or one event's.
    func audit(user: UserID?, event: String? = nil, _ page: PageQuery) async throws -> Page<AuditEvent> {
        let rows = try await store.auditEvents(userID: user, event: event, before: page.cursor, limit: page.limit + 1)
        return Page(rows: Array(rows.prefix(page.limit)), more: rows.count > page.limit)
    }

    /// The event feed, oldest first, after the page's cursor; optionally one user's or one type's.
    func events(user: UserID?, type: String? = nil, _ page: PageQuery) async throws -> Page<DomainEvent> {
        let rows = try await store.events(after: page.cursor, type: type, userID: user, limit: page.limit + 1)
        return Page(rows: Array(rows.prefix(page.limit)), more: rows.count > page.limit)
    }

    private func adminView(_ user: User) async throws -> AdminUser {
        adminView(user, identities: try await store.identities(of: user.id), passkeys: try await store.passkeys(of: user.id))
    }

    private func adminView(_ user: User, identities: [Identity], passkeys: [Passkey]) -> AdminUser {
        AdminUser(
            user: user.payload(identities: identities), disabled: user.isDisabled, disabledAt: user.disabledAt?.rfc3339,
            disabledReason: user.disabledReason, passkeys: passkeys.map(PasskeyService.payload))
    }
}
