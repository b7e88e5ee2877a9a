import Foundation
import Hummingbird
import GatehouseCore
import GatehouseStore
import GatehouseWire

/// A user's page: profile, metadata, plan and credits, grants, actions, sessions, ways in, purchases and
/// the plan ledger's sources, the credit ledger, audit trail and events.
extension ConsoleViews {
    /// A user's page. `live` tells the sessions that still work and `liveGrant` the grants that
    /// still give the plan (those offer Revoke); `tiers` are what a grant may give.
    func user(
        _ detail: ConsoleService.UserDetail, live: (Session) -> Bool, liveGrant: (PlanGrant) -> Bool, credits: [String], tiers: [String]
    ) -> Page {
        let user = detail.user
        let sessions: [[String: Any]] = detail.sessions.rows.map { session in
            let state = session.isRevoked ? "revoked" : (live(session) ? "active" : "expired")
            return [
                "id": session.id.description, "state": state, "active": state == "active", "provider": session.provider.rawValue,
                "method": session.method ?? "", "created": Self.time(session.createdAt), "last_active": Self.time(session.lastActiveAt),
                "agent": session.userAgent ?? "", "ip": session.ipAddress ?? "", "reason": session.revokedReason ?? "",
            ]
        }
        let balances: [[String: Any]] = detail.entitlements.credits.sorted { $0.key < $1.key }.map {
            ["name": $0.key, "remaining": $0.value.remaining, "granted": $0.value.granted, "resets": $0.value.resetsAt ?? ""]
        }
        let grants: [[String: Any]] = detail.grants.map { grant in
            let state = grant.revokedAt != nil ? "revoked" : (liveGrant(grant) ? "active" : "ended")
            return [
                "id": grant.id.uuidString.lowercased(), "state": state, "active": state == "active",
                // Not `tier`: an empty one is dropped and mustache would show the page's.
                "grant_tier": grant.tier ?? "",
                "until": Self.time(grant.until), "reason": grant.reason, "by": grant.createdBy, "created": Self.time(grant.startsAt),
                "revoked": grant.revokedAt.map(Self.time) ?? "",
            ]
        }
        // The plan ledger as the entitlement engine read it: every source's own right.
        let sources: [[String: Any]] = (detail.entitlements.sources ?? []).map {
            ["source": $0.source ?? "", "product": $0.productID, "status": $0.status, "expires": $0.expiresAt ?? "", "test": $0.testPurchase == true]
        }
        return Page(
            name: "user", title: user.email ?? user.displayName ?? user.id.description,
            values: [
                "id": user.id.description, "email": user.email ?? "", "has_email": user.email != nil,
                "offers_reset": user.email != nil && preset.signInMethods.emailPassword,
                "offers_magic_link": user.email != nil && preset.signInMethods.magicLink,
                "verified": user.emailVerified, "unverified": user.email != nil && !user.emailVerified,
                "display_name": user.displayName ?? "", "handle": user.handle ?? "", "anonymous": user.isAnonymous,
                "created": Self.time(user.createdAt), "disabled": user.isDisabled, "disabled_text": user.isDisabled ? "true" : "false",
                "disabled_reason": user.disabledReason ?? "", "plan_state": detail.entitlements.planState,
                "plan_tier": detail.entitlements.tier ?? "",
                "plan_override": user.planOverride ?? "none", "trial_ends": detail.entitlements.trial.map { $0.endsAt } ?? "",
                "confirm_text": ConsoleService.confirmationText(user),
                "user_metadata": Self.prettyJSON(user.userMetadata), "app_metadata": Self.prettyJSON(user.appMetadata),
                "plans": Self.options(Self.accountPlans, none: "No override", selected: user.planOverride),
                "identities": detail.identities.map {
                    ["provider": $0.provider.rawValue, "subject": $0.subject, "email": $0.email ?? "", "relay": $0.isPrivateRelay] as [String: Any]
                },
                "passkeys": detail.passkeys.map {
                    [
                        "name": $0.name, "created": Self.time($0.createdAt), "last_used": $0.lastUsedAt.map(Self.time) ?? "never",
                        "synced": $0.backedUp ? "yes" : "no",
                    ]
                },
                "ways_in": Credential.allCases.map { ["name": $0.rawValue, "count": detail.credentials[$0]] as [String: Any] },
                "factors": detail.factors.map {
                    ["name": $0.name, "type": $0.type, "confirmed": $0.confirmedAt.map(Self.time) ?? "not confirmed"]
                },
                // Older sessions than the page shows may be live: the button revokes every one.
                "sessions": sessions, "has_live_sessions": detail.sessions.older != nil || sessions.contains { $0["active"] as? Bool == true },
                "sessions_pager": Self.pager(detail, user.id, .sessions),
                "balances": balances, "credit_names": credits, "has_credit_names": !credits.isEmpty,
                "purchases": detail.subscriptions.map {
                    [
                        "product": $0.productID, "status": $0.status.rawValue, "expires": $0.expiresAt.map(Self.time) ?? "",
                        "environment": $0.environment, "transaction": $0.originalTransactionID,
                    ]
                },
                "sources": sources, "has_sources": !sources.isEmpty,
                "grants": grants, "has_grants": !grants.isEmpty,
                "tiers": Self.options(tiers, none: "The plan's own tier", selected: nil),
                "ledger_pager": Self.pager(detail, user.id, .ledger),
                "ledger": detail.ledger.rows.map {
                    [
                        "credit": $0.credit, "amount": $0.amount < 0 ? "+\(-$0.amount)" : "−\($0.amount)", "action": $0.action,
                        "subject": $0.subject ?? "", "at": Self.time($0.createdAt),
                    ]
                },
                "audit": detail.audit.map(Self.auditRow), "events": detail.events.map(Self.eventRow),
            ])
    }

    /// The query of an account's page: where its sessions and its credit ledger start (the
    /// `sessions_before` and `ledger_before` of the pagers' links); 400 `invalid_request` for a
    /// cursor that is not one.
    static func historyCursors(_ query: Hummingbird.Parameters) throws -> ConsoleService.HistoryCursors {
        func cursor(_ name: String) throws -> RowCursor? {
            guard let text = query[Substring(name)].map(String.init), !text.isEmpty else { return nil }
            guard let cursor = RowCursor(text) else { throw GatehouseError.invalidRequest("The cursor is not valid.") }
            return cursor
        }
        return ConsoleService.HistoryCursors(sessions: try cursor(History.sessions.parameter), ledger: try cursor(History.ledger.parameter))
    }

    /// The histories an account's page shows a page at a time, each with its own cursor.
    enum History: CaseIterable {
        case sessions, ledger

        /// The query parameter of its cursor.
        var parameter: String {
            switch self {
            case .sessions: "sessions_before"
            case .ledger: "ledger_before"
            }
        }

        func page(_ detail: ConsoleService.UserDetail) -> (from: RowCursor?, older: RowCursor?) {
            switch self {
            case .sessions: (detail.sessions.from, detail.sessions.older)
            case .ledger: (detail.ledger.from, detail.ledger.older)
            }
        }
    }

    /// The links under a history of an account's page: its newest rows again when the page
    /// starts further back, and its older rows when there are some; the other histories stay
    /// where they are. An empty string (no pager) when the page shows the whole history.
    static func pager(_ detail: ConsoleService.UserDetail, _ id: UserID, _ history: History) -> Any {
        let (from, older) = history.page(detail)
        guard from != nil || older != nil else { return "" }
        func link(_ cursor: RowCursor?) -> String {
            var query: [String: String?] = [:]
            for other in History.allCases { query[other.parameter] = (other == history ? cursor : other.page(detail).from)?.token }
            return Self.link("/admin/users/\(id)", query)
        }
        return ["newest": from == nil ? "" : link(nil), "older": older.map(link) ?? ""] as [String: Any]
    }

    /// A metadata object as the page shows it and its form is prefilled: indented, keys sorted,
    /// `{}` when empty (the template escapes it as it escapes everything).
    static func prettyJSON(_ object: [String: JSONValue]) -> String {
        guard !object.isEmpty else { return "{}" }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        return (try? encoder.encode(object)).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
    }

    /// The metadata form's field for `kind` (`user_metadata`, `app_metadata`) as a merge patch:
    /// nil when the field is absent or blank (that object stays as it is); 400 `invalid_request`
    /// unless it is one JSON object (a key named twice or nesting past the request limit included).
    static func metadataPatch(_ form: [String: String], _ kind: AccountMetadata.Kind) throws -> [String: JSONValue]? {
        let text = (form[kind.rawValue] ?? "").trimmingCharacters(in: .whitespacesAndNewlines)
        guard !text.isEmpty else { return nil }
        let data = Data(text.utf8)
        guard JSONShape.problem(in: data) == nil, let object = try? JSONDecoder().decode([String: JSONValue].self, from: data) else {
            throw GatehouseError.invalidRequest("\(kind.rawValue) must be one JSON object.")
        }
        return object
    }
}
