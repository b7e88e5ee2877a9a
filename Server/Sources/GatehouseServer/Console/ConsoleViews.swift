import Foundation
import GatehouseCore
import GatehouseStore
import GatehouseWire
import Hummingbird
import Mustache

/// The console's pages as mustache contexts for `Resources/templates/admin.html.mustache`.
/// Each page is one section of the layout (`<main data-page="…">`, which the browser tests read).
struct ConsoleViews: Sendable {
    let library: MustacheLibrary
    let preset: Preset

    init(preset: Preset) throws {
        library = try Templates.library(["admin.html"])
        self.preset = preset
    }

    struct Page {
        /// `data-page` and the section of the template.
        var name: String
        var title: String
        var values: [String: Any] = [:]
        /// A key of `notices`.
        var notice: String?
        var error: (code: String, message: String)?
    }

    /// What a `?notice=` may say after an action.
    static let notices: [String: String] = [
        "signed_in": "Signed in. The session lasts 30 minutes.", "session_revoked": "The session was revoked.",
        "sessions_revoked": "Every session was revoked.", "plan_set": "The plan override was saved.",
        "credits_granted": "The credits were granted.", "disabled": "The account was disabled and its sessions ended.",
        "enabled": "The account was enabled.", "reset_sent": "A password reset link was queued.",
        "magic_link_sent": "A sign-in link was queued.", "verification_sent": "A verification link was queued.",
        "user_deleted": "The account was deleted.", "keys_rotated": "The signing key was rotated.",
        "test_mail_queued": "The test mail was queued.", "grant_created": "The grant was made.",
        "grant_revoked": "The grant was revoked.", "client_created": "The client was registered.",
        "client_secret_rotated": "The client has a new secret; the old one no longer works.",
        "client_deleted": "The client was deleted; its sessions ended.", "metadata_set": "The metadata was saved.",
        "counting": "Counting again. Reload the page in a moment to see the new counts.",
    ]

    func render(_ page: Page, csrf: String?, nonce: String) -> String {
        var context: [String: Any] = [
            "app_name": preset.app.name, "brand_color": preset.app.brandColor, "nonce": nonce, "page": page.name,
            "title": page.title, "csrf": csrf ?? "", "signed_in": csrf != nil,
            "nav": [
                ("overview", "Overview", "/admin"), ("users", "Users", "/admin/users"), ("audit", "Audit log", "/admin/audit"),
                ("events", "Events", "/admin/events"), ("keys", "Signing keys", "/admin/keys"),
                ("clients", "OAuth clients", "/admin/clients"), ("mail", "Mail", "/admin/mail"), ("preset", "Preset", "/admin/preset"),
            ].map { ["name": $0.0, "label": $0.1, "href": $0.2, "current": $0.0 == page.name || ($0.0 == "users" && page.name == "user")] },
        ]
        context[page.name.replacingOccurrences(of: "-", with: "_") + "_page"] = Self.compact(page.values)
        if let code = page.notice, let message = Self.notices[code] {
            context["notice"] = ["code": code, "message": message]
        }
        if let error = page.error { context["error"] = ["code": error.code, "message": error.message] }
        return library.render(context, withTemplate: "admin.html") ?? ""
    }

    // MARK: Pages

    func signIn(token: String, error: (code: String, message: String)?) -> Page {
        Page(name: "sign-in", title: "Sign in", values: ["token": token], error: error)
    }

    func forbidden() -> Page {
        Page(
            name: "forbidden", title: "Form refused",
            values: ["message": "This form could not be checked (it came without its token or from another page). Open the page again and retry."])
    }

    func notFound(_ message: String) -> Page {
        Page(name: "not-found", title: "Not found", values: ["message": message])
    }

    func overview(_ overview: ConsoleService.Overview) -> Page {
        var values: [String: Any] = [
            "mail_pending": overview.mail.pending, "mail_failed": overview.mail.failed,
            "counted_at": overview.counts.counted?.countedAt.rfc3339 ?? "", "counting": overview.counts.countingSince != nil,
            "counting_since": overview.counts.countingSince?.rfc3339 ?? "",
            "jobs_failed": overview.failedJobs.total, "has_failed_jobs": !overview.failedJobs.latest.isEmpty,
            "has_hooks": !overview.hooks.isEmpty,
            "hooks": overview.hooks.map { hook in
                [
                    "name": hook.label, "calls": hook.figures.calls, "failures": hook.figures.failures,
                    "p99": hook.figures.p99.map { "\(Self.milliseconds($0)) ms" } ?? "–",
                ] as [String: Any]
            },
            "failed_jobs": overview.failedJobs.latest.map { job in
                [
                    "kind": job.kind, "attempts": job.attempts, "error": String(job.lastError.prefix(200)), "queued": job.createdAt.rfc3339,
                ] as [String: Any]
            },
        ]
        if let counted = overview.counts.counted { values["counted"] = Self.counted(counted, brandColor: preset.app.brandColor) }
        return Page(name: "overview", title: "Overview", values: values)
    }

    /// The overview's charts and plan figures, as counted.
    static func counted(_ counted: OverviewCounts.Counted, brandColor: String) -> [String: Any] {
        let labels = counted.days.map { dayLabel($0.day) }
        func chart(_ title: String, _ path: KeyPath<DailyActivity, Int>, _ color: String) -> [String: Any] {
            let values = counted.days.map { $0[keyPath: path] }
            return [
                "title": title, "total": values.reduce(0, +), "today": values.last ?? 0,
                "svg": ConsoleCharts.bars(title: "\(title) per day, last \(counted.days.count) days", labels: labels, values: values, color: color),
            ]
        }
        let conversion = counted.trialsStarted == 0 ? "–" : "\(Int((Double(counted.trialsConverted) * 100 / Double(counted.trialsStarted)).rounded())) %"
        return [
            "days": counted.days.count,
            "charts": [
                chart("Sign-ups", \.signUps, "#2563eb"), chart("Sign-ins", \.signIns, "#0891b2"),
                chart("Failed sign-ins", \.failures, "#dc2626"), chart("Lockouts", \.lockouts, "#b45309"),
                chart("Active users", \.activeUsers, "#16a34a"),
            ],
            "plan_mix": ConsoleCharts.shares(title: "Plan mix", parts: counted.planMix.map { ($0.state, $0.count) }, color: brandColor),
            "sampled": counted.sampled, "trials_started": counted.trialsStarted, "trials_converted": counted.trialsConverted,
            "conversion": conversion,
        ]
    }

    /// A duration in whole milliseconds (a hook's p99).
    static func milliseconds(_ duration: Duration) -> Int {
        Int(duration.components.seconds * 1_000 + duration.components.attoseconds / 1_000_000_000_000_000)
    }

    /// The users page's query: search, filters and cursor, as the form sends them.
    struct UsersQuery {
        var filter = UserFilter()
        var plan: String?
        var provider: String?
        var cursor: String?

        init(_ query: Hummingbird.Parameters) {
            func value(_ name: String) -> String? {
                query[Substring(name)].map(String.init).map { $0.trimmingCharacters(in: .whitespaces) }.flatMap { $0.isEmpty ? nil : $0 }
            }
            filter.search = value("q")
            provider = value("provider")
            filter.anonymous = value("anonymous").map { $0 != "0" }
            filter.disabledOnly = value("disabled") != nil
            filter.unverifiedOnly = value("unverified") != nil
            plan = value("plan")
            cursor = value("after")
        }

        /// The query again, for the next page's link.
        func link(after cursor: String) -> String {
            ConsoleViews.link(
                "/admin/users",
                [
                    "q": filter.search, "plan": plan, "provider": provider, "anonymous": filter.anonymous == true ? "1" : nil,
                    "disabled": filter.disabledOnly ? "1" : nil, "unverified": filter.unverifiedOnly ? "1" : nil, "after": cursor,
                ])
        }
    }

    /// The plan states an account can have (or be overridden to).
    static let accountPlans = PlanState.all.filter { $0 != .guest }.map(\.rawValue)

    /// A `<select>`'s options: "" (labelled `none`) then `values`, with `selected` marked.
    static func options(_ values: [String], none: String, selected: String?) -> [[String: Any]] {
        ([""] + values).map { ["value": $0, "label": $0.isEmpty ? none : $0, "selected": $0 == (selected ?? "")] }
    }

    func users(_ page: ConsoleService.UserPage, query: UsersQuery) -> Page {
        Page(
            name: "users", title: "Users",
            values: [
                "q": query.filter.search ?? "",
                "plans": Self.options(Self.accountPlans, none: "Any plan", selected: query.plan),
                "providers": Self.options(["email", "apple", "google", "anonymous"], none: "Any provider", selected: query.provider),
                "anonymous": query.filter.anonymous == true, "disabled": query.filter.disabledOnly,
                "unverified": query.filter.unverifiedOnly,
                "rows": page.rows.map { row in
                    [
                        "id": row.user.id.description, "email": row.user.email ?? "", "handle": row.user.handle ?? "",
                        "name": row.user.displayName ?? "", "plan_state": row.planState, "providers": row.providers.joined(separator: ", "),
                        "anonymous": row.user.isAnonymous, "disabled": row.user.isDisabled,
                        "unverified": row.user.email != nil && !row.user.emailVerified, "created": Self.time(row.user.createdAt),
                    ] as [String: Any]
                },
                "empty": page.rows.isEmpty, "next": page.next.map(query.link(after:)) ?? "",
                "scan_note": query.plan != nil || query.provider != nil, "scanned": page.scanned,
            ])
    }

    func audit(_ found: OperatorService.Page<AuditEvent>, user: UserID?, event: String?) -> Page {
        let page = found.rows
        var next = ""
        if found.more, let last = page.last?.sequence {
            next = Self.link("/admin/audit", ["user_id": user?.description, "event": event, "before": String(last)])
        }
        return Page(
            name: "audit", title: "Audit log",
            values: [
                "rows": page.map(Self.auditRow), "empty": page.isEmpty, "next": next, "user_id": user?.description ?? "", "event": event ?? "",
            ])
    }

    func events(_ found: OperatorService.Page<DomainEvent>, user: UserID?, type: String?) -> Page {
        let page = found.rows
        var next = ""
        if found.more, let last = page.last?.sequence {
            next = Self.link("/admin/events", ["user_id": user?.description, "type": type, "after": String(last)])
        }
        return Page(
            name: "events", title: "Events",
            values: [
                "rows": page.map(Self.eventRow), "empty": page.isEmpty, "next": next, "user_id": user?.description ?? "", "type": type ?? "",
            ])
    }

    func keys(_ keys: [SigningKeyRecord], active: String?) -> Page {
        Page(
            name: "keys", title: "Signing keys",
            values: [
                "rows": keys.sorted { $0.createdAt > $1.createdAt }.map {
                    [
                        "kid": $0.kid, "algorithm": $0.algorithm, "status": $0.status, "created": Self.time($0.createdAt),
                        "retired": $0.retiredAt.map(Self.time) ?? "", "published_until": $0.publishUntil.map(Self.time) ?? "",
                        "sealed": $0.encryption == "none" ? "no" : "yes", "signing": $0.kid == active,
                    ] as [String: Any]
                }
            ])
    }

    func mail(_ counts: MailCounts, recent: [OutboxMessage]) -> Page {
        Page(
            name: "mail", title: "Mail",
            values: [
                "pending": counts.pending, "sent": counts.sent, "failed": counts.failed, "dropped": counts.dropped, "retried": counts.retried,
                "rows": recent.map {
                    [
                        "kind": $0.kind, "recipient": $0.recipient, "status": $0.status, "attempts": $0.attempts,
                        "created": Self.time($0.createdAt), "error": $0.lastError ?? "",
                    ] as [String: Any]
                },
            ])
    }

    func preset(_ preset: Preset) throws -> Page {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        let json = String(decoding: try encoder.encode(preset), as: UTF8.self)
        return Page(name: "preset", title: "Preset", values: ["name": preset.app.name, "json": json])
    }

    // MARK: Rows and formats

    /// Drops empty strings, nested too: mustache renders a section for any string, so an empty
    /// one must be absent to read as "none".
    static func compact(_ values: [String: Any]) -> [String: Any] {
        var result: [String: Any] = [:]
        for (key, value) in values {
            switch value {
            case let text as String where text.isEmpty: continue
            case let nested as [String: Any]: result[key] = compact(nested)
            case let rows as [[String: Any]]: result[key] = rows.map(compact)
            default: result[key] = value
            }
        }
        return result
    }

    static func auditRow(_ event: AuditEvent) -> [String: Any] {
        [
            "at": time(event.createdAt), "event": event.event.rawValue, "outcome": event.outcome.rawValue,
            "user_id": event.userID?.description ?? "", "ip": event.ipAddress ?? "",
            "details": event.details.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " "),
            "failed": event.outcome != .success,
        ]
    }

    static func eventRow(_ event: DomainEvent) -> [String: Any] {
        [
            "at": time(event.createdAt), "type": event.type.rawValue, "user_id": event.userID?.description ?? "",
            "data": event.data.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " "),
            "sequence": event.sequence.map(String.init) ?? "",
        ]
    }

    static func time(_ date: Date) -> String {
        utcFormat(date, "yyyy-MM-dd HH:mm 'UTC'")
    }

    static func dayLabel(_ day: Int64) -> String {
        utcFormat(Date(unixSeconds: day * 86_400), "MMM d")
    }

    static func link(_ path: String, _ query: [String: String?]) -> String {
        var components = URLComponents()
        components.path = path
        let items = query.sorted { $0.key < $1.key }.compactMap { item in item.value.map { URLQueryItem(name: item.key, value: $0) } }
        // No `?` when every value is nil (the newest page of an account's history).
        components.queryItems = items.isEmpty ? nil : items
        return components.string ?? path
    }
}
