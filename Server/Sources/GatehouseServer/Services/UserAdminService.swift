import Foundation
import GatehouseCore
import GatehouseStore
import GatehouseWire

/// The operator's view of accounts: list, show, disable, enable. Shared by the admin API
/// and the `gatehouse users` commands.
public struct UserAdminService: Sendable {
    let store: any UserStore & AuditStore & AccountStore & PasskeyStore & MFAStore
    /// Records `user.deleted` and the like (and queues their webhooks and Apple revocations;
    /// the server's job worker delivers them, also when the CLI queued them).
    let unitOfWork: UnitOfWork
    let lifecycle: AccountLifecycle
    let clock: any WallClock

    /// One page, newest first. `cursor` is the `next_cursor` of the previous page.
    public func list(search: String?, cursor: String?, limit: Int) async throws -> AdminUserList {
        var before: UserCursor?
        if let cursor, !cursor.isEmpty {
            guard let parsed = UserCursor(cursor) else { throw GatehouseError.invalidRequest("The cursor is not valid.") }
            before = parsed
        }
        guard (1...200).contains(limit) else { throw GatehouseError.invalidRequest("The limit must be between 1 and 200.") }
        let users = try await store.users(search: search, before: before, limit: limit + 1)
        let page = Array(users.prefix(limit))
        var result: [AdminUser] = []
        for user in page {
            result.append(try await adminView(user))
        }
        let next = users.count > limit ? page.last.map { UserCursor(createdAt: $0.createdAt.unixSeconds, id: $0.id.description).token } : nil
        return AdminUserList(users: result, nextCursor: next)
    }

    /// A user by id or by email.
    public func show(_ reference: String) async throws -> AdminUser {
        let user = try await find(reference)
        var view = try await adminView(user)
        view.credentials = try await AccountLifecycle.inventory(of: user.id, in: store).byName
        return view
    }

    /// `by` names the operator's tool in the audit row (`operator`: the admin API or the CLI);
    /// `client` is the operator's browser or caller when there is one.
    public func disable(_ reference: String, reason: String?, by actor: String = "operator", client: ClientInfo? = nil) async throws -> AdminUser {
        let user = try await find(reference)
        if let reason, reason.count > 500 { throw GatehouseError.invalidRequest("The reason must be at most 500 characters.") }
        let now = clock.now
        try await unitOfWork.run(client: client) { work in
            _ = try await work.tx.setDisabled(user.id, at: user.disabledAt ?? now, reason: reason ?? user.disabledReason, now: now)
            // Disabling ends every session, not only the next refresh.
            _ = try await work.tx.revokeSessions(of: user.id, keeping: nil, reason: "account_disabled", at: now)
            var details = ["by": actor]
            details["reason"] = reason
            try await work.audit(.accountDisabled, user: user.id, details: details)
        }
        return try await show(user.id.description)
    }

    /// Deletes an account as the operator: no proof asked; Apple's token is revoked and a
    /// `user.deleted` event recorded.
    public func delete(_ reference: String, by actor: String = "operator", client: ClientInfo? = nil) async throws {
        let user = try await find(reference)
        try await unitOfWork.run(client: client) { work in
            guard try await lifecycle.delete(work, user.id, reason: "operator") else {
                throw GatehouseError.notFound("No user matches '\(reference)'.")
            }
            try await work.audit(.accountDeleted, user: user.id, details: ["by": actor])
        }
    }

    /// Sets or clears the plan override the entitlement engine honours.
    public func setPlanOverride(
        _ reference: String, plan: String?, by actor: String = "operator", reason: String? = nil, client: ClientInfo? = nil
    ) async throws -> AdminUser {
        let user = try await find(reference)
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

    /// The event feed, oldest first, after the page's cursor (which an empty page answers again).
    func events(_ query: PageQuery) async throws -> EventList {
        let page = try await store.events(after: query.cursor, userID: nil, limit: query.limit)
        return EventList(events: page.map(EventEntry.init), nextCursor: page.last?.sequence.map { String($0) } ?? query.cursorText)
    }

    public func enable(_ reference: String, by actor: String = "operator", client: ClientInfo? = nil) async throws -> AdminUser {
        let user = try await find(reference)
        try await unitOfWork.run(client: client) { work in
            _ = try await work.tx.setDisabled(user.id, at: nil, reason: nil, now: work.now)
            try await work.audit(.accountEnabled, user: user.id, details: ["by": actor])
        }
        return try await show(user.id.description)
    }

    /// The audit trail, newest first, optionally for one user.
    func audit(user: UserID?, _ query: PageQuery) async throws -> AuditList {
        let count = query.limit
        let events = try await store.auditEvents(userID: user, before: query.cursor, limit: count + 1)
        let page = Array(events.prefix(count))
        let next = events.count > count ? page.last?.sequence.map { String($0) } : nil
        return AuditList(
            events: page.map(AuditEntry.init), nextCursor: next)
    }

    private func find(_ reference: String) async throws -> User {
        let user: User?
        if let id = UserID(reference) {
            user = try await store.user(id: id)
        } else if reference.contains("@") {
            user = try await store.user(normalizedEmail: EmailAddress.normalize(reference))
        } else {
            user = nil
        }
        guard let user else { throw GatehouseError.notFound("No user matches '\(reference)'.") }
        return user
    }

    private func adminView(_ user: User) async throws -> AdminUser {
        AdminUser(
            user: user.payload(identities: try await store.identities(of: user.id)), disabled: user.isDisabled,
            disabledAt: user.disabledAt?.rfc3339, disabledReason: user.disabledReason,
            passkeys: try await store.passkeys(of: user.id).map(PasskeyService.payload))
    }
}
