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

    /// A generated sign-up's account: made with the password (unverified) when there is none;
    /// an unverified one is used as it is (`password` and `data` are not applied to it), a
    /// verified one is 422 `email_exists`.
    private func signupUser(_ body: GoTrueGenerateLink) async throws -> (User, created: Bool) {
        if let existing = try await store.user(normalizedEmail: EmailAddress.normalize(body.email)) {
            if existing.emailVerified { throw Self.emailExists }
            return (existing, false)
        }
        guard let password = body.password else { throw GatehouseError.invalidRequest("A signup link needs a password.") }
        try GoTrueMetadata.checkSize(body.data, kind: .user)
        let patch = GoTrueMetadata.patch(from: body.data)
        if let patch { try await profiles.check(patch) }
        let user = try await passwords.createByOperator(
            email: body.email, password: password, passwordHash: nil, emailConfirmed: false, displayName: patch?.displayName,
            userMetadata: body.data ?? [:])
        return (user, true)
    }

    /// An email change's new address: well formed, and no account's.
    private func freeAddress(_ address: String?) async throws -> String {
        guard let address, EmailAddress.isValid(address) else {
            throw GatehouseError(status: 400, code: .invalidEmail, message: "Unable to validate email address: invalid format")
        }
        if try await store.user(normalizedEmail: EmailAddress.normalize(address)) != nil { throw Self.emailExists }
        return address
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

    /// `POST /admin/generate_link`: the link (and a magic link's 6-digit code), in the answer and
    /// not mailed, for an app that sends its own mail. `magiclink` (an account is made for an
    /// address without one, and the link is a sign-up's) and `invite` make a magic link;
    /// `signup` a verification link for an account with the password; `recovery` a reset link;
    /// `email_change_new` and `email_change_current` a link that moves the account to `new_email`
    /// (proved by the first, unverified by the second). Each link, followed, opens a session. The link is
    /// `/auth/v1/verify?token=…&type=…&redirect_to=…`, and `hashed_token` is its token, which
    /// `POST /verify` takes as `token_hash`.
    func generateLink(_ body: GoTrueGenerateLink, redirectTo: String?) async throws -> GoTrueGeneratedLink {
        let purpose: EmailTokenPurpose
        let user: User
        var type = body.type
        var newEmail: String?
        switch body.type {
        case "magiclink", "invite":
            purpose = .magicLink
            // As GoTrue's, a magic link for an address without an account is a sign-up's.
            if body.type == "magiclink", try await store.user(normalizedEmail: EmailAddress.normalize(body.email)) == nil { type = "signup" }
            user = try await invitee(email: body.email, data: body.data, refuseVerified: body.type == "invite")
        case "signup":
            // For the account made here, a verification link: following it proves the address and
            // keeps the password the service role set. For an unverified account that was there
            // already, whose password anyone may have set, a magic link: the owner's first proof,
            // which ends everything added before it.
            let (found, created) = try await signupUser(body)
            (purpose, user) = (created ? .verifyEmail : .magicLink, found)
        case "recovery", "email_change_current", "email_change_new":
            guard let found = try await store.user(normalizedEmail: EmailAddress.normalize(body.email)) else {
                throw GoTrueError(status: 404, .userNotFound, "User with this email not found")
            }
            user = found
            if body.type == "recovery" {
                purpose = .passwordReset
            } else {
                purpose = body.type == "email_change_new" ? .emailChangeNew : .emailChangeCurrent
                newEmail = try await freeAddress(body.newEmail)
            }
        default:
            throw GatehouseError.invalidRequest("The type must be signup, invite, magiclink, recovery, email_change_current or email_change_new.")
        }
        guard !user.isDisabled else { throw GatehouseError.accountDisabled(preset) }
        let target = redirectTarget(redirectTo)
        let (token, hash) = links.newToken()
        let (code, codeHash) = try links.codes.issue(boundTo: hash)
        let now = clock.now
        let ttl =
            switch purpose {
            case .passwordReset: preset.email.resetTokenTTLSeconds
            case .magicLink: preset.email.magicLinkTTLSeconds
            default: preset.email.verificationTokenTTLSeconds
            }
        // An email change's token carries the address it makes the account's.
        let address = newEmail ?? user.email ?? body.email
        let record = EmailToken(
            hash: hash, purpose: purpose, userID: user.id, email: EmailAddress.deliverable(address),
            normalizedEmail: EmailAddress.normalize(address),
            codeHash: purpose == .magicLink ? codeHash : nil,
            redirectTo: purpose == .magicLink ? target : nil, passwordStamp: user.passwordChangedAt?.unixSeconds, createdAt: now,
            expiresAt: now.addingTimeInterval(TimeInterval(ttl)))
        try await unitOfWork.run { [type] work in
            // One live link of a kind at a time, as for mailed ones.
            try await work.tx.retireEmailTokens(
                userID: purpose == .magicLink ? nil : user.id, normalizedEmail: purpose == .magicLink ? record.normalizedEmail : nil,
                purpose: purpose, at: work.now)
            try await work.tx.insertEmailToken(record)
            try await work.audit(.linkGenerated, user: user.id, details: ["type": type, "by": Self.serviceRole])
        }
        let link = Self.appending(
            // Both halves of an email change are `email_change` links, as GoTrue's.
            query: [("token", token), ("type", newEmail == nil ? type : "email_change"), ("redirect_to", target)], to: publicURL.trimmingSuffix("/") + "/auth/v1/verify")
        var shaped = try await goTrueUser(id: user.id)
        if type == "invite" { shaped.invitedAt = GoTrueTime.format(now) }
        shaped.newEmail = newEmail
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
