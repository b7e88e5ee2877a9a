import Foundation
import GatehouseCore
import GatehouseWire
import GatehouseStore

/// Queues the mail an account's life causes: verification links, security notices, and
/// forgot-password and magic-link requests. Every `queue…` call writes to the outbox inside the
/// caller's unit of work, so the mail goes out if and only if what caused it committed; the
/// unit of work wakes the mail worker after the commit.
struct AccountMail: Sendable {
    let templates: Templates
    let links: EmailLinks
    let preset: Preset

    /// Makes a verification link for the user's current address and queues its mail.
    func queueVerification(_ work: Work<any EmailTokenStore>, user: User) async throws {
        guard let email = user.email.map(EmailAddress.deliverable), let normalized = user.normalizedEmail else { return }
        let now = work.now
        let (token, hash) = links.newToken()
        let ttl = preset.email.verificationTokenTTLSeconds
        try await work.tx.insertEmailToken(
            EmailToken(
                hash: hash, purpose: .verifyEmail, userID: user.id, email: email, normalizedEmail: normalized, createdAt: now,
                expiresAt: now.addingTimeInterval(TimeInterval(ttl))))
        let link = links.link(EmailLinks.verifyPath, token: token)
        let message = templates.mail(.verification, link: link, values: ["hours": String(ttl / 3_600)])
        try await work.enqueueMail(message.outbox(kind: .verification, to: email, at: now))
    }

    /// "Your password was changed", to a verified address only (an unverified one may not be
    /// the account owner's).
    func queuePasswordChanged(_ work: Work<some Sendable>, user: User) async throws {
        guard preset.email.notifyPasswordChanged, user.emailVerified, let email = user.email.map(EmailAddress.deliverable) else { return }
        let message = templates.mail(.passwordChanged, values: ["time": Self.humanTime(work.now)])
        try await work.enqueueMail(message.outbox(kind: .passwordChanged, to: email, at: work.now))
    }

    /// A security notice about the account's second factors (`mfa_factor_added`,
    /// `mfa_factor_removed`, `recovery_code_used`), to a verified address only.
    func queueSecurityNotice(_ work: Work<some Sendable>, user: User, kind: MailKind, values: [String: String]) async throws {
        guard user.emailVerified, let email = user.email.map(EmailAddress.deliverable) else { return }
        let message = templates.mail(kind, values: values.merging(["time": Self.humanTime(work.now)]) { mine, _ in mine })
        try await work.enqueueMail(message.outbox(kind: kind, to: email, at: work.now))
    }

    /// "New sign-in", when the account signs in from a device (user agent) none of its earlier
    /// sessions used. The first sign-in of an account sends nothing.
    func queueNewSignInIfNew(_ work: Work<any SessionStore>, user: User, client: ClientInfo) async throws {
        guard preset.email.notifyNewSignIn, user.emailVerified, let email = user.email.map(EmailAddress.deliverable) else { return }
        let history = try await work.tx.sessionHistory(of: user.id, userAgent: client.userAgent)
        guard history.any, !history.fromAgent else { return }
        // A summary from a fixed vocabulary, never the header's own words (finding 16).
        var device = DeviceSummary.describe(userAgent: client.userAgent)
        if let ip = client.ip { device += " (\(ip))" }
        let message = templates.mail(.newSignIn, values: ["time": Self.humanTime(work.now), "device": device])
        try await work.enqueueMail(message.outbox(kind: .newSignIn, to: email, at: work.now))
    }

    /// Queues a forgot-password or magic-link request for `email`; the mail worker composes it
    /// (or drops it when there is nothing to send). The caller's work is the same whether or
    /// not the address has an account.
    func queueRequest(
        _ work: Work<some Sendable>, kind: MailKind, email: String, redirectTo: String? = nil, upgrading: UserID? = nil, existingAccountsOnly: Bool = false
    ) async throws {
        var payload = ["email": email]
        payload["redirect_to"] = redirectTo
        payload["upgrade_user_id"] = upgrading?.description
        if existingAccountsOnly { payload[MailRequestComposer.existingAccountsOnlyKey] = "true" }
        try await work.enqueueMail(
            OutboxMessage(
                createdAt: work.now, kind: kind.rawValue, recipient: email, subject: kind.rawValue, textBody: nil, htmlBody: nil, payload: payload))
    }

    static func humanTime(_ date: Date) -> String {
        utcFormat(date, "d MMMM yyyy 'at' HH:mm 'UTC'")
    }
}

/// Composes queued requests in the mail worker: looks the address up, makes the link (and
/// code), and fills the mail in, all in one transaction; or drops the request when the address
/// has no account (password reset, or a magic link that may make none) or a disabled one.
struct MailRequestComposer: Sendable {
    /// What composing reads and writes, in one transaction.
    typealias Stores = any UserStore & EmailTokenStore & OutboxStore
    let transactions: Transactions<Stores>
    let templates: Templates
    let links: EmailLinks
    let preset: Preset
    let clock: any WallClock

    /// In a magic link request's payload: mail the link only if the address has an account.
    static let existingAccountsOnlyKey = "existing_accounts_only"

    /// The message with its mail filled in, or `nil` when the request was dropped.
    func compose(_ message: OutboxMessage) async throws -> OutboxMessage? {
        let typed = message.payload?["email"] ?? message.recipient
        let normalized = EmailAddress.normalize(typed)
        let now = clock.now
        return try await transactions.run { tx -> OutboxMessage? in
            let user = try await tx.user(normalizedEmail: normalized)
            if let user, user.isDisabled {
                try await tx.dropMail(message.id, reason: "account disabled", at: now)
                return nil
            }
            let composed: (recipient: String, mail: Templates.Mail, link: URL)
            switch MailKind(rawValue: message.kind) {
            case .passwordReset:
                guard let user else {
                    try await tx.dropMail(message.id, reason: "no account", at: now)
                    return nil
                }
                composed = try await reset(tx, user: user, now: now)
            case .magicLink:
                if user == nil, message.payload?[Self.existingAccountsOnlyKey] == "true" {
                    try await tx.dropMail(message.id, reason: "no account", at: now)
                    return nil
                }
                composed = try await magic(
                    tx, user: user, typed: typed, normalized: normalized, redirectTo: message.payload?["redirect_to"],
                    upgrading: message.payload?["upgrade_user_id"].flatMap(UserID.init), now: now)
            default:
                try await tx.dropMail(message.id, reason: "unknown request kind", at: now)
                return nil
            }
            try await tx.composeMail(
                message.id, recipient: composed.recipient, subject: composed.mail.subject, text: composed.mail.text,
                html: composed.mail.html, linkHost: composed.link.host, payload: composed.mail.tokens.payload)
            var filled = message
            filled.recipient = composed.recipient
            filled.subject = composed.mail.subject
            filled.textBody = composed.mail.text
            filled.htmlBody = composed.mail.html
            filled.linkHost = composed.link.host
            filled.payload = composed.mail.tokens.payload
            return filled
        }
    }

    private func reset(_ tx: any EmailTokenStore, user: User, now: Date) async throws -> (String, Templates.Mail, URL) {
        let recipient = EmailAddress.deliverable(user.email ?? "")
        // One live reset link at a time: a new request replaces the older ones.
        try await tx.retireEmailTokens(userID: user.id, normalizedEmail: nil, purpose: .passwordReset, at: now)
        let (token, hash) = links.newToken()
        let ttl = preset.email.resetTokenTTLSeconds
        try await tx.insertEmailToken(
            EmailToken(
                hash: hash, purpose: .passwordReset, userID: user.id, email: recipient, normalizedEmail: user.normalizedEmail ?? "",
                passwordStamp: user.passwordChangedAt?.unixSeconds, createdAt: now, expiresAt: now.addingTimeInterval(TimeInterval(ttl))))
        let link = links.link(EmailLinks.resetPath, token: token)
        return (recipient, templates.mail(.passwordReset, link: link, values: ["minutes": String(ttl / 60)]), link)
    }

    private func magic(
        _ tx: any EmailTokenStore, user: User?, typed: String, normalized: String, redirectTo: String?, upgrading: UserID?, now: Date
    ) async throws -> (String, Templates.Mail, URL) {
        let recipient = EmailAddress.deliverable(user?.email ?? typed)
        try await tx.retireEmailTokens(userID: nil, normalizedEmail: normalized, purpose: .magicLink, at: now)
        let (token, hash) = links.newToken()
        let (code, codeHash) = try links.codes.issue(boundTo: hash)
        let ttl = preset.email.magicLinkTTLSeconds
        try await tx.insertEmailToken(
            EmailToken(
                hash: hash, purpose: .magicLink, userID: user?.id, email: recipient, normalizedEmail: normalized,
                codeHash: codeHash, redirectTo: redirectTo, createdAt: now,
                expiresAt: now.addingTimeInterval(TimeInterval(ttl)), upgradeUserID: upgrading))
        let link = links.link(EmailLinks.magicPath, token: token)
        return (recipient, templates.mail(.magicLink, link: link, code: code, values: ["minutes": String(ttl / 60)]), link)
    }
}
