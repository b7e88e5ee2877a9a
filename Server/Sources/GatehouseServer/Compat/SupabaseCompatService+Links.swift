import Foundation
import GatehouseCore
import GatehouseStore
import GatehouseWire

/// GoTrue's invitations and the links its admin API makes without a mail
/// (`POST /invite`, `POST /admin/generate_link`), on Gatehouse's magic links and reset links.
extension SupabaseCompatService {
    static let emailExists = GoTrueError(status: 422, .emailExists, "A user with this email address has already been registered")

    /// `POST /invite`: an account for the address, unverified and without a password, and the
    /// preset's magic-link mail to it; following that link (or `GET /verify` with its token and
    /// `type=invite`) proves the address and signs the invitee in. An address whose account is
    /// verified already is 422 `email_exists`; one whose account is not gets the mail again.
    func invite(_ body: GoTrueInvite, redirectTo: String?, client: ClientInfo) async throws -> GoTrueUser {
        // What the mail request would refuse, refused before there is an account to leave behind.
        try magicLinks.gate.requireMethod(preset.signInMethods.magicLink)
        if let redirectTo { _ = try redirects.require(redirectTo) }
        let user = try await invitee(email: body.email, data: body.data)
        try await magicLinks.request(email: body.email, redirectTo: redirectTo, client: client, existingAccountsOnly: true)
        var shaped = try await goTrueUser(user)
        shaped.invitedAt = GoTrueTime.format(clock.now)
        return shaped
    }

    /// The account an invitation (or a generated invite or magic link) is for: made when there is
    /// none, refused when it is verified already (invitations only).
    private func invitee(email: String, data: [String: JSONValue]?, refuseVerified: Bool = true) async throws -> User {
        if let existing = try await store.user(normalizedEmail: EmailAddress.normalize(email)) {
            if refuseVerified, existing.emailVerified { throw Self.emailExists }
            return existing
        }
        try GoTrueMetadata.checkSize(data, kind: .user)
        let patch = GoTrueMetadata.patch(from: data)
        if let patch { try await profiles.check(patch) }
        return try await passwords.createByOperator(
            email: email, password: nil, passwordHash: nil, emailConfirmed: false, displayName: patch?.displayName, userMetadata: data ?? [:])
    }

    /// `POST /admin/generate_link`: the link and its 6-digit code, in the answer and not mailed,
    /// for an app that sends its own mail. `magiclink` (an account is made for an address without
    /// one) and `invite` make a magic link; `recovery` a reset link. The link is
    /// `/auth/v1/verify?token=…&type=…&redirect_to=…`, and `hashed_token` is its token, which
    /// `POST /verify` takes as `token_hash`.
    func generateLink(_ body: GoTrueGenerateLink, redirectTo: String?) async throws -> GoTrueGeneratedLink {
        let purpose: EmailTokenPurpose
        let user: User
        var type = body.type
        switch body.type {
        case "magiclink", "invite":
            purpose = .magicLink
            // As GoTrue's, a magic link for an address without an account is a sign-up's.
            if body.type == "magiclink", try await store.user(normalizedEmail: EmailAddress.normalize(body.email)) == nil { type = "signup" }
            user = try await invitee(email: body.email, data: body.data, refuseVerified: body.type == "invite")
        case "recovery":
            purpose = .passwordReset
            guard let found = try await store.user(normalizedEmail: EmailAddress.normalize(body.email)) else {
                throw GoTrueError(status: 404, .userNotFound, "User with this email not found")
            }
            user = found
        default:
            throw GatehouseError.invalidRequest(
                "The type must be magiclink, invite or recovery (signup and email_change links are not served: docs/supabase-compat.md).")
        }
        guard !user.isDisabled else { throw GatehouseError.accountDisabled(preset) }
        let target = redirectTarget(redirectTo)
        let (token, hash) = links.newToken()
        let code = links.newCode()
        let now = clock.now
        let ttl = purpose == .passwordReset ? preset.email.resetTokenTTLSeconds : preset.email.magicLinkTTLSeconds
        let record = EmailToken(
            hash: hash, purpose: purpose, userID: user.id, email: EmailAddress.deliverable(user.email ?? body.email),
            normalizedEmail: user.normalizedEmail ?? EmailAddress.normalize(body.email),
            codeHash: purpose == .magicLink ? try links.codeHash(code, tokenHash: hash) : nil,
            redirectTo: purpose == .magicLink ? target : nil, passwordStamp: user.passwordChangedAt?.unixSeconds, createdAt: now,
            expiresAt: now.addingTimeInterval(TimeInterval(ttl)))
        try await unitOfWork.run { [type] work in
            // One live link of a kind at a time, as for mailed ones.
            try await work.tx.retireEmailTokens(
                userID: purpose == .passwordReset ? user.id : nil, normalizedEmail: purpose == .magicLink ? record.normalizedEmail : nil,
                purpose: purpose, at: work.now)
            try await work.tx.insertEmailToken(record)
            try await work.audit(.linkGenerated, user: user.id, details: ["type": type, "by": Self.serviceRole])
        }
        let link = Self.appending(
            query: [("token", token), ("type", type), ("redirect_to", target)], to: publicURL.trimmingSuffix("/") + "/auth/v1/verify")
        var shaped = try await goTrueUser(id: user.id)
        if type == "invite" { shaped.invitedAt = GoTrueTime.format(now) }
        return GoTrueGeneratedLink(
            user: shaped, actionLink: link, emailOTP: purpose == .magicLink ? code : "", hashedToken: token, verificationType: type,
            redirectTo: target)
    }
}

extension String {
    fileprivate func trimmingSuffix(_ suffix: String) -> String {
        hasSuffix(suffix) ? String(dropLast(suffix.count)) : self
    }
}
