import Foundation
import GatehouseCore
@testable import GatehouseServer
import GatehouseStore
import GatehouseTestSupport
import GatehouseWire
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Testing

/// Verification, password reset and magic links, end to end: the mail leaves over SMTP to a
/// real server (aiosmtpd), the test reads the link or code out of it and finishes the flow
/// through HTTP, as a person with a phone would.
@Suite struct EmailFlowTests {
    static let password = "correct horse battery"

    /// The link token (for `path`) in the newest mail to `to` whose kind the subject names.
    static func token(in mail: ReceivedMail, path: String) throws -> String {
        let text = try #require(mail.parts["text/plain"])
        let pattern = NSRegularExpression.escapedPattern(for: path) + #"\?token=([A-Za-z0-9_-]+)"#
        let regex = try NSRegularExpression(pattern: pattern)
        let match = try #require(regex.firstMatch(in: text, range: NSRange(text.startIndex..., in: text)))
        return String(text[Range(match.range(at: 1), in: text)!])
    }

    static func code(in mail: ReceivedMail) throws -> String {
        let text = try #require(mail.parts["text/plain"])
        let regex = try NSRegularExpression(pattern: #"\b([0-9]{6})\b"#)
        let match = try #require(regex.firstMatch(in: text, range: NSRange(text.startIndex..., in: text)))
        return String(text[Range(match.range(at: 1), in: text)!])
    }

    static func smtp(_ sink: SMTPSink) -> (inout GatehouseConfig) -> Void {
        { $0.smtpURL = "smtp://127.0.0.1:\(sink.port)" }
    }

    @Test(.requires(SMTPSink.python != nil, "GATEHOUSE_TEST_PYTHON"), arguments: Backend.available)
    func signUpSendsAVerificationLinkThatVerifies(_ backend: Backend) async throws {
        let sink = try await SMTPSink()
        defer { sink.stop() }
        try await TestApp.run(backend, preset: "handz", adjust: Self.smtp(sink)) { client, _ in
            let api = AuthClient(client: client)
            let account = try await api.account("Ann.Verify@Example.com")
            #expect(account.user.emailVerified == false)
            let mail = try await sink.waitForMail { $0.headers["subject"] == "Confirm your email for Handz" }
            #expect(mail.headers["to"] == "Ann.Verify@Example.com")
            #expect(mail.parts["text/html"]?.contains("Confirm email") == true)
            let token = try Self.token(in: mail, path: "/auth/verify-email")

            // Opening the link only shows a page; nothing is verified by a GET (mail scanners).
            let page = try await client.execute(uri: "/auth/verify-email?token=\(token)", method: .get)
            #expect(page.status == .ok && page.text.contains(#"data-state="confirm""#))
            let me = try await api.get("/v1/me", token: account.session.accessToken).json(MeResponse.self)
            #expect(me.user.emailVerified == false)

            let verified = try await api.post("/v1/auth/email/verify", #"{"token": "\#(token)"}"#)
            #expect(verified.status == .ok)
            #expect(try verified.json(UserResponse.self).user.emailVerified == true)
            // "I've verified": /v1/me says so at once.
            let after = try await api.get("/v1/me", token: account.session.accessToken).json(MeResponse.self)
            #expect(after.user.emailVerified == true)
            // A second tap on the same link is harmless; a made-up one is not valid.
            #expect(try await api.post("/v1/auth/email/verify", #"{"token": "\#(token)"}"#).status == .ok)
            let bogus = try await api.post("/v1/auth/email/verify", #"{"token": "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"}"#)
            #expect(bogus.status == .badRequest && bogus.error?.code == .tokenInvalid)
            let again = try await api.post("/v1/auth/email/verification", "{}", token: account.session.accessToken)
            #expect(again.status == .conflict && again.error?.code == .alreadyVerified)
            // The refreshed session carries the new claim (decision 10).
            let refreshed = try await api.refresh(account.session.refreshToken).json(SessionResponse.self)
            #expect(try jwtParts(refreshed.session.accessToken).claims["email_verified"] as? Bool == true)

            // A sign-in from a device the account has not used before: a notice to the (now
            // verified) address. The same device again sends nothing more.
            let phone: HTTPFields = [.userAgent: "OtherPhone/2.0"]
            let credentials = AuthClient.credentials("ann.verify@example.com", Self.password)
            #expect(try await api.post("/v1/auth/login", credentials, headers: phone).status == .ok)
            let notice = try await sink.waitForMail { $0.headers["subject"] == "New sign-in to your Handz account" }
            // A summary from a fixed vocabulary, never the header's text (issue 17, finding 16).
            #expect(notice.parts["text/plain"]?.contains("An unknown device") == true)
            #expect(notice.parts["text/plain"]?.contains("OtherPhone/2.0") == false)
            #expect(try await api.post("/v1/auth/login", credentials, headers: phone).status == .ok)
            #expect(try await api.post("/v1/auth/login", AuthClient.credentials("ann.verify@example.com", Self.password)).status == .ok)
            try await Task.sleep(for: .milliseconds(300))
            #expect(sink.messages.filter { ReceivedMail($0).headers["subject"]?.hasPrefix("New sign-in") == true }.count == 1)
        }
    }

    @Test func verificationResendsAreLimited() async throws {
        let clock = ManualClock()
        try await TestApp.run(.sqlite, clock: clock) { client, config in
            let api = AuthClient(client: client)
            let account = try await api.account("limits@example.com")
            let access = account.session.accessToken
            // Sign-up sent one a moment ago.
            let tooSoon = try await api.post("/v1/auth/email/verification", "{}", token: access)
            #expect(tooSoon.status == .tooManyRequests && tooSoon.error?.code == .rateLimited)
            #expect(tooSoon.error?.retryAfter == 60 && tooSoon.headers[.retryAfter] == "60")
            for _ in 0..<4 {
                clock.advance(by: 61)
                #expect(try await api.post("/v1/auth/email/verification", "{}", token: access).status == .accepted)
            }
            // Five in a day, counting sign-up's.
            clock.advance(by: 61)
            let daily = try await api.post("/v1/auth/email/verification", "{}", token: access)
            #expect(daily.status == .tooManyRequests)
            #expect((daily.error?.retryAfter ?? 0) > 80_000)
            let links = try await TestApp.withStore(config) { store in
                try await store.emailTokenTimes(
                    userID: UserID(account.user.id)!, purpose: .verifyEmail, since: Date(timeIntervalSince1970: 0))
            }
            #expect(links.count == 5)
        }
    }

    @Test(.requires(SMTPSink.python != nil, "GATEHOUSE_TEST_PYTHON"), arguments: Backend.available)
    func aResetLinkSetsANewPasswordAndEndsEverySession(_ backend: Backend) async throws {
        let sink = try await SMTPSink()
        defer { sink.stop() }
        try await TestApp.run(backend, preset: "syncwell", adjust: Self.smtp(sink)) { client, _ in
            let api = AuthClient(client: client)
            let strong = "Tr0ub4dor&3 horses"
            let account = try await api.account("reset.me@example.com", strong)
            let other = try await api.login("reset.me@example.com", strong).json(AuthResponse.self)

            #expect(try await api.post("/v1/auth/password/forgot", #"{"email": "RESET.me@example.com "}"#).status == .accepted)
            let mail = try await sink.waitForMail { $0.headers["subject"]?.contains("Reset your") == true }
            #expect(mail.headers["to"] == "reset.me@example.com")
            let token = try Self.token(in: mail, path: "/auth/reset-password")

            // The policy applies and a refused password leaves the link usable.
            let weak = try await api.post("/v1/auth/password/reset", #"{"token": "\#(token)", "password": "short"}"#)
            #expect(weak.status == .unprocessableContent && weak.error?.code == .weakPassword)
            let reset = try await api.post("/v1/auth/password/reset", #"{"token": "\#(token)", "password": "N3w&Better-Password"}"#)
            #expect(reset.status == .ok)

            // Every session ended; the old password is gone; the new one works.
            for session in [account.session, other.session] {
                let refreshed = try await api.refresh(session.refreshToken)
                #expect(refreshed.status == .unauthorized)
                #expect(try await api.get("/v1/me", token: session.accessToken).status == .unauthorized)
            }
            #expect(try await api.login("reset.me@example.com", strong).status == .unauthorized)
            let fresh = try await api.login("reset.me@example.com", "N3w&Better-Password")
            #expect(fresh.status == .ok)
            // The link proved the inbox, so the address is verified now.
            #expect(try fresh.json(AuthResponse.self).user.emailVerified == true)

            // Single use.
            let reused = try await api.post("/v1/auth/password/reset", #"{"token": "\#(token)", "password": "An0ther&Password!"}"#)
            #expect(reused.status == .badRequest && reused.error?.code == .tokenInvalid)
            // And a notice went out.
            let notice = try await sink.waitForMail { $0.headers["subject"] == "Your SyncWell password was changed" }
            #expect(notice.headers["to"] == "reset.me@example.com")
        }
    }

    @Test func anExpiredResetLinkSaysSoWithTheSeedsMessage() async throws {
        let clock = ManualClock()
        try await TestApp.run(.sqlite, preset: "syncwell", clock: clock) { client, config in
            let api = AuthClient(client: client)
            _ = try await api.account("late@example.com", "Tr0ub4dor&3 horses")
            #expect(try await api.post("/v1/auth/password/forgot", #"{"email": "late@example.com"}"#).status == .accepted)
            let mail = try await Self.outboxMail(config, kind: "password_reset")
            let token = try Self.token(in: ReceivedMail(text: mail.textBody ?? ""), path: "/auth/reset-password")
            clock.advance(by: 3_601)
            let expired = try await api.post("/v1/auth/password/reset", #"{"token": "\#(token)", "password": "N3w&Better-Password"}"#)
            #expect(expired.status == .badRequest && expired.error?.code == .resetTokenExpired)
            #expect(expired.error?.message == "This password reset link has expired. Please request a new one.")
            let page = try await client.execute(uri: "/auth/reset-password?token=\(token)", method: .get)
            #expect(page.text.contains(#"data-state="expired""#) && page.text.contains("Send a new link"))
        }
    }

    @Test func aPasswordChangeKillsOlderResetLinks() async throws {
        try await TestApp.run(.sqlite) { client, config in
            let api = AuthClient(client: client)
            let account = try await api.account("changer@example.com")
            #expect(try await api.post("/v1/auth/password/forgot", #"{"email": "changer@example.com"}"#).status == .accepted)
            let mail = try await Self.outboxMail(config, kind: "password_reset")
            let token = try Self.token(in: ReceivedMail(text: mail.textBody ?? ""), path: "/auth/reset-password")
            let change = try await api.post(
                "/v1/auth/password/change", #"{"current_password": "\#(Self.password)", "new_password": "a brand new secret"}"#,
                token: account.session.accessToken)
            #expect(change.status == .ok)
            let reset = try await api.post("/v1/auth/password/reset", #"{"token": "\#(token)", "password": "yet another secret"}"#)
            #expect(reset.status == .badRequest && reset.error?.code == .tokenInvalid)
        }
    }

    @Test func forgotPasswordNeverRevealsAnAccountUnderStrictButHandzSays() async throws {
        // A fixed clock keeps the repeated request in the same one-minute window.
        try await TestApp.run(.sqlite, clock: ManualClock()) { client, config in
            let api = AuthClient(client: client)
            _ = try await api.account("known@example.com")
            let known = try await api.post("/v1/auth/password/forgot", #"{"email": "known@example.com"}"#)
            let unknown = try await api.post("/v1/auth/password/forgot", #"{"email": "nobody@example.com"}"#)
            #expect(known.status == .accepted && unknown.status == .accepted)
            #expect(known.text == unknown.text)
            // The worker drops the unknown one and forgets the address.
            let dropped = try await Self.outbox(config) { mails in
                mails.contains { $0.status == "dropped" } && mails.contains { $0.kind == "password_reset" && $0.textBody != nil }
            }
            #expect(!dropped.contains { $0.recipient == "nobody@example.com" })
            #expect(dropped.contains { $0.kind == "password_reset" && $0.recipient == "known@example.com" && $0.textBody != nil })
            let invalid = try await api.post("/v1/auth/password/forgot", #"{"email": "not-an-email"}"#)
            #expect(invalid.status == .badRequest && invalid.error?.code == .invalidEmail)
            // The same address again within the minute: 429, account or not.
            let again = try await api.post("/v1/auth/password/forgot", #"{"email": "nobody@example.com"}"#)
            #expect(again.status == .tooManyRequests && again.error?.code == .rateLimited)
        }
        try await TestApp.run(.sqlite, preset: "handz") { client, _ in
            let api = AuthClient(client: client)
            let missing = try await api.post("/v1/auth/password/forgot", #"{"email": "nobody@example.com"}"#)
            #expect(missing.status == .notFound && missing.error?.code == .emailNotFound)
            #expect(missing.error?.message == "No account found for that email.")
        }
    }

    @Test(.requires(SMTPSink.python != nil, "GATEHOUSE_TEST_PYTHON"), arguments: Backend.available)
    func aMagicLinkSignsUpThenSignsIn(_ backend: Backend) async throws {
        let sink = try await SMTPSink()
        defer { sink.stop() }
        let clock = ManualClock(Date())
        try await TestApp.run(backend, preset: "hannah", clock: clock, adjust: Self.smtp(sink)) { client, _ in
            let api = AuthClient(client: client)
            #expect(try await api.post("/v1/auth/magic-link", #"{"email": "Hannah.User@example.com"}"#).status == .accepted)
            let first = try await sink.waitForMail { $0.headers["to"] == "Hannah.User@example.com" }
            #expect(first.headers["subject"] == "Your Hannah Health sign-in link")
            // The code, for when the link opens in the wrong browser.
            let code = try Self.code(in: first)
            let signup = try await api.post("/v1/auth/magic-link/verify", #"{"email": "hannah.user@EXAMPLE.com", "code": "\#(code)"}"#)
            #expect(signup.status == .ok)
            let created = try signup.json(SignInResponse.self)
            #expect(created.created && created.user.emailVerified && created.user.email == "Hannah.User@example.com")
            #expect(created.user.identities.map(\.provider) == ["email"])
            // The code is spent.
            let reused = try await api.post("/v1/auth/magic-link/verify", #"{"email": "hannah.user@example.com", "code": "\#(code)"}"#)
            #expect(reused.status == .badRequest && reused.error?.code == .tokenInvalid)

            // One request a minute per address.
            let tooSoon = try await api.post("/v1/auth/magic-link", #"{"email": "hannah.user@example.com"}"#)
            #expect(tooSoon.status == .tooManyRequests && tooSoon.error?.code == .rateLimited)

            // Later, the link itself signs the same account in, and works once.
            clock.advance(by: 120)
            #expect(try await api.post("/v1/auth/magic-link", #"{"email": "hannah.user@example.com"}"#).status == .accepted)
            let second = try await sink.waitForMail { $0.headers["to"] == "Hannah.User@example.com" && (try? Self.code(in: $0)) != code }
            let token = try Self.token(in: second, path: "/auth/magic-link")
            let signIn = try await api.post("/v1/auth/magic-link/verify", #"{"token": "\#(token)"}"#)
            #expect(signIn.status == .ok)
            let signedIn = try signIn.json(SignInResponse.self)
            #expect(!signedIn.created && signedIn.user.id == created.user.id)
            let reusedLink = try await api.post("/v1/auth/magic-link/verify", #"{"token": "\#(token)"}"#)
            #expect(reusedLink.status == .badRequest && reusedLink.error?.code == .tokenInvalid)
        }
    }

    @Test func magicLinkTokensCodesAndExpiry() async throws {
        let clock = ManualClock()
        try await TestApp.run(.sqlite, preset: "hannah", clock: clock) { client, config in
            let api = AuthClient(client: client)
            #expect(try await api.post("/v1/auth/magic-link", #"{"email": "link@example.com"}"#).status == .accepted)
            let mail = try await Self.outboxMail(config, kind: "magic_link")
            let received = ReceivedMail(text: mail.textBody ?? "")
            let token = try Self.token(in: received, path: "/auth/magic-link")
            let signIn = try await api.post("/v1/auth/magic-link/verify", #"{"token": "\#(token)"}"#)
            let signedIn = try signIn.json(SignInResponse.self)
            #expect(signIn.status == .ok && signedIn.created)
            let again = try await api.post("/v1/auth/magic-link/verify", #"{"token": "\#(token)"}"#)
            #expect(again.status == .badRequest && again.error?.code == .tokenInvalid)

            // A second link for the same person signs in without creating anything.
            clock.advance(by: 61)
            #expect(try await api.post("/v1/auth/magic-link", #"{"email": "link@example.com"}"#).status == .accepted)
            let second = try await Self.outboxMail(config, kind: "magic_link", after: mail.id)
            let code = try Self.code(in: ReceivedMail(text: second.textBody ?? ""))
            let wrong = code == "000000" ? "111111" : "000000"
            // Five wrong codes kill it, and then even the right one is refused.
            for attempt in 1...5 {
                let response = try await api.post("/v1/auth/magic-link/verify", #"{"email": "link@example.com", "code": "\#(wrong)"}"#)
                #expect(response.status == .badRequest)
                #expect(response.error?.code == (attempt < 5 ? .tokenInvalid : .codeExhausted))
            }
            let dead = try await api.post("/v1/auth/magic-link/verify", #"{"email": "link@example.com", "code": "\#(code)"}"#)
            #expect(dead.error?.code == .codeExhausted)

            // Fifteen minutes, then expired.
            clock.advance(by: 61)
            #expect(try await api.post("/v1/auth/magic-link", #"{"email": "link@example.com"}"#).status == .accepted)
            // The third mail, not the first (the helper's `after` excludes only the second).
            let third = try await Self.outboxMail(config, kind: "magic_link", after: second.id, where: { $0.id != mail.id })
            let thirdCode = try Self.code(in: ReceivedMail(text: third.textBody ?? ""))
            clock.advance(by: 901)
            let late = try await api.post("/v1/auth/magic-link/verify", #"{"email": "link@example.com", "code": "\#(thirdCode)"}"#)
            #expect(late.status == .badRequest && late.error?.code == .tokenExpired)
            let me = try await api.post("/v1/auth/magic-link/verify", #"{"token": "\#(try Self.token(in: ReceivedMail(text: third.textBody ?? ""), path: "/auth/magic-link"))"}"#)
            #expect(me.error?.code == .tokenExpired)
        }
    }

    @Test func redirectsMustMatchTheAllowlistExactly() async throws {
        try await TestApp.run(.sqlite, preset: "hannah", adjust: {
            $0.redirectAllowlist = ["https://app.hannah.health", "https://app.hannah.health:8443"]
        }) { client, config in
            let api = AuthClient(client: client)
            let refused = [
                "https://evil.example", "https://app.hannah.health.evil.example", "https://app.hannah.health@evil.example",
                "//evil.example", "https://app.hannah.health//evil.example", #"https://app.hannah.health\@evil.example"#,
                "http://app.hannah.health", "https://app.hannah.health:444", "https://аpp.hannah.health",
                "https://app.hannah.health%2eevil.example", "javascript:alert(1)", "https://app.hannah.health./x",
                "hannahhealth://evil", "https://2130706433/", "https://0x7f000001/", "https://[::1]/", "https://[::ffff:7f00:1]/",
                "https://127.0.0.1/",
            ]
            for (index, target) in refused.enumerated() {
                let body = try JSONSerialization.data(withJSONObject: ["email": "r\(index)@example.com", "redirect_to": target])
                let response = try await api.post("/v1/auth/magic-link", String(decoding: body, as: UTF8.self))
                #expect(response.status == .badRequest && response.error?.code == .invalidRedirect, "\(target)")
            }
            for (index, target) in ["https://app.hannah.health/auth/callback", "https://APP.hannah.health:8443/x?y=1", "hannahhealth://auth"]
                .enumerated()
            {
                let body = try JSONSerialization.data(withJSONObject: ["email": "ok\(index)@example.com", "redirect_to": target])
                let response = try await api.post("/v1/auth/magic-link", String(decoding: body, as: UTF8.self))
                #expect(response.status == .accepted, "\(target)")
            }
            // The hosted page sends the person back to the allowed address with the token.
            let mail = try await Self.outboxMail(config, kind: "magic_link") { $0.recipient == "ok0@example.com" }
            let token = try Self.token(in: ReceivedMail(text: mail.textBody ?? ""), path: "/auth/magic-link")
            let page = try await client.execute(uri: "/auth/magic-link?token=\(token)", method: .get)
            #expect(page.text.contains(#"data-state="ready""#))
            #expect(page.text.contains("https://app.hannah.health/auth/callback?token=\(token)"))
        }
    }

    @Test func aMagicLinkToAnUnverifiedPasswordAccountDropsThatPassword() async throws {
        try await TestApp.run(.sqlite) { client, config in
            let api = AuthClient(client: client)
            // Someone signs up with another person's address and a password of theirs...
            let squatter = try await api.account("victim@example.com", "the squatter knows this")
            // ...then the real owner signs in by magic link.
            #expect(try await api.post("/v1/auth/magic-link", #"{"email": "victim@example.com"}"#).status == .accepted)
            let mail = try await Self.outboxMail(config, kind: "magic_link")
            let token = try Self.token(in: ReceivedMail(text: mail.textBody ?? ""), path: "/auth/magic-link")
            let owner = try await api.post("/v1/auth/magic-link/verify", #"{"token": "\#(token)"}"#).json(SignInResponse.self)
            #expect(owner.created == false && owner.user.id == squatter.user.id && owner.user.emailVerified)
            #expect(try await api.login("victim@example.com", "the squatter knows this").status == .unauthorized)
            #expect(try await api.refresh(squatter.session.refreshToken).status == .unauthorized)
        }
    }

    @Test func hostedFormsNeedTheirCSRFTokenAndCarryAStrictPolicy() async throws {
        try await TestApp.run(.sqlite) { client, config in
            let api = AuthClient(client: client)
            _ = try await api.account("pages@example.com")
            #expect(try await api.post("/v1/auth/password/forgot", #"{"email": "pages@example.com"}"#).status == .accepted)
            let mail = try await Self.outboxMail(config, kind: "password_reset")
            let token = try Self.token(in: ReceivedMail(text: mail.textBody ?? ""), path: "/auth/reset-password")
            let page = try await client.execute(uri: "/auth/reset-password?token=\(token)", method: .get)
            #expect(page.status == .ok && page.text.contains(#"data-state="form""#))
            let csp = try #require(page.headers[.contentSecurityPolicy])
            #expect(csp.contains("default-src 'none'") && csp.contains("form-action 'self'") && csp.contains("frame-ancestors 'none'"))
            #expect(!page.text.contains("<script") && !page.text.contains("http://") && !page.text.contains("https://"))
            #expect(page.headers[.referrerPolicy] == "no-referrer")
            let cookie = try #require(page.headers[.setCookie])
            #expect(cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict"))
            let csrf = try #require(cookie.split(separator: ";").first?.split(separator: "=").last.map(String.init))
            #expect(page.text.contains(#"name="csrf_token" value="\#(csrf)""#))

            let form = "token=\(token)&password=brand+new+secret&password_confirm=brand+new+secret"
            let formHeaders: HTTPFields = [.contentType: "application/x-www-form-urlencoded"]
            // Without the cookie, or from another site: refused, and the link still works.
            let forged = try await client.execute(
                uri: "/auth/reset-password", method: .post, headers: formHeaders, body: ByteBuffer(string: form + "&csrf_token=\(csrf)"))
            #expect(forged.status == .forbidden)
            var crossSite = formHeaders
            crossSite[.cookie] = "gatehouse_csrf=\(csrf)"
            crossSite[.origin] = "https://evil.example"
            let cross = try await client.execute(
                uri: "/auth/reset-password", method: .post, headers: crossSite, body: ByteBuffer(string: form + "&csrf_token=\(csrf)"))
            #expect(cross.status == .forbidden)

            var good = formHeaders
            good[.cookie] = "gatehouse_csrf=\(csrf)"
            let mismatch = try await client.execute(
                uri: "/auth/reset-password", method: .post, headers: good,
                body: ByteBuffer(string: "token=\(token)&password=brand+new+secret&password_confirm=other&csrf_token=\(csrf)"))
            #expect(mismatch.text.contains(#"data-state="form""#) && mismatch.text.contains("do not match"))
            let done = try await client.execute(
                uri: "/auth/reset-password", method: .post, headers: good, body: ByteBuffer(string: form + "&csrf_token=\(csrf)"))
            #expect(done.status == .ok && done.text.contains(#"data-state="success""#))
            #expect(try await api.login("pages@example.com", "brand new secret").status == .ok)
            // Used: a clear page with a way to get a new link.
            let used = try await client.execute(uri: "/auth/reset-password?token=\(token)", method: .get)
            #expect(used.text.contains(#"data-state="used""#) && used.text.contains("Send a new link"))
        }
    }

    // MARK: Helpers

    /// Waits for the newest outbox mail of `kind` that has been composed (newer than `after`).
    static func outboxMail(
        _ config: GatehouseConfig, kind: String, after: UUID? = nil, where extra: @escaping @Sendable (OutboxMessage) -> Bool = { _ in true }
    ) async throws -> OutboxMessage {
        let mails = try await outbox(config) { mails in
            mails.contains { $0.kind == kind && $0.textBody != nil && $0.id != after && extra($0) }
        }
        return try #require(mails.first { $0.kind == kind && $0.textBody != nil && $0.id != after && extra($0) })
    }

    /// Polls the outbox (about ten seconds at most) until `done` holds.
    static func outbox(_ config: GatehouseConfig, until done: @escaping @Sendable ([OutboxMessage]) -> Bool) async throws -> [OutboxMessage] {
        var mails: [OutboxMessage] = []
        for _ in 0..<200 {
            mails = try await TestApp.withStore(config) { try await $0.recentMail(limit: 50) }
            if done(mails) { return mails }
            try await Task.sleep(for: .milliseconds(50))
        }
        return mails
    }
}

extension ReceivedMail {
    /// A mail known by its text alone (read from the dev outbox).
    init(text: String) {
        self.init("")
        parts["text/plain"] = text
    }
}

extension SMTPSink {
    /// Waits (about 90 seconds at most: a crashed node's lease on a mail runs 40) for a mail
    /// that satisfies `match`.
    func waitForMail(_ match: @escaping (ReceivedMail) -> Bool) async throws -> ReceivedMail {
        for _ in 0..<900 {
            if let mail = messages.map({ ReceivedMail($0) }).first(where: match) { return mail }
            try await Task.sleep(for: .milliseconds(100))
        }
        throw ProcessError("no matching mail arrived; got: \(messages.map { ReceivedMail($0).headers["subject"] ?? "?" })")
    }
}

/// The real binary: a person's browser on the hosted pages, and a crash between sign-up and
/// delivery.
@Suite struct EmailProcessTests {
    static var browser: String? { ProcessInfo.processInfo.environment["GATEHOUSE_TEST_BROWSER"] }

    /// Headless Chromium opens the reset link from a real mail, fills the form, submits and
    /// sees the success page; the new password then signs in.
    @Test(.requires(SMTPSink.python != nil && browser != nil, "GATEHOUSE_TEST_PYTHON and GATEHOUSE_TEST_BROWSER"))
    func aPersonResetsTheirPasswordInABrowser() async throws {
        let sink = try await SMTPSink()
        defer { sink.stop() }
        let (server, port, base) = try await ServerProcess.onChosenPort { port in
            [
                "GATEHOUSE_PORT": String(port), "GATEHOUSE_ADMIN_KEY": TestApp.adminKey, "GATEHOUSE_PRESET": "handz",
                "GATEHOUSE_SMTP_URL": "smtp://127.0.0.1:\(sink.port)", "GATEHOUSE_LOG_LEVEL": "warning",
            ]
        }
        let json = ["Content-Type": "application/json"]
        let signup = try await HTTP.request(
            base.appendingPathComponent("v1/auth/signup"), method: "POST", headers: json,
            body: Data(#"{"email": "browser@example.com", "password": "old password here"}"#.utf8))
        #expect(signup.status == 201)
        let forgot = try await HTTP.request(
            base.appendingPathComponent("v1/auth/password/forgot"), method: "POST", headers: json,
            body: Data(#"{"email": "browser@example.com"}"#.utf8))
        #expect(forgot.status == 202)
        let mail = try await sink.waitForMail { $0.headers["subject"] == "Reset your Handz password" }
        let token = try EmailFlowTests.token(in: mail, path: "/auth/reset-password")
        let link = "http://127.0.0.1:\(port)/auth/reset-password?token=\(token)"
        #expect(mail.parts["text/plain"]?.contains(link) == true)

        let output = try await Self.run(
            try #require(SMTPSink.python), [try #require(Self.browser), "reset", "--url", link, "--password", "a new password from chromium"])
        #expect(output.status == 0, "\(output.text)")
        let login = try await HTTP.request(
            base.appendingPathComponent("v1/auth/login"), method: "POST", headers: json,
            body: Data(#"{"email": "browser@example.com", "password": "a new password from chromium"}"#.utf8))
        #expect(login.status == 200)
        server.signal(SIGTERM)
        _ = try await server.exitStatus()
    }

    /// `kill -9` after sign-up committed and before the mail went out: the next start sends it.
    @Test(.requires(SMTPSink.python != nil, "GATEHOUSE_TEST_PYTHON"))
    func theVerificationMailSurvivesACrash() async throws {
        let port = try SMTPSink.freePort()
        let directory = try ServerProcess.makeDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        // Nothing listens on the SMTP port yet, so the first node cannot deliver.
        let environment = [
            "GATEHOUSE_PORT": "0", "GATEHOUSE_ADMIN_KEY": TestApp.adminKey, "GATEHOUSE_SMTP_URL": "smtp://127.0.0.1:\(port)",
            "GATEHOUSE_LOG_LEVEL": "warning",
        ]
        let first = try ServerProcess(environment: environment, directory: directory)
        let base = try await first.baseURL()
        let signup = try await HTTP.request(
            base.appendingPathComponent("v1/auth/signup"), method: "POST", headers: ["Content-Type": "application/json"],
            body: Data(#"{"email": "crash.verify@example.com", "password": "correct horse battery"}"#.utf8))
        #expect(signup.status == 201)
        first.signal(SIGKILL)
        _ = try await first.exitStatus()

        let sink = try await SMTPSink(port: port)
        defer { sink.stop() }
        let second = try ServerProcess(environment: environment, directory: directory)
        _ = try await second.baseURL()
        let mail = try await sink.waitForMail { $0.headers["to"] == "crash.verify@example.com" }
        #expect(mail.headers["subject"] == "Confirm your email for Gatehouse")
        #expect(try EmailFlowTests.token(in: mail, path: "/auth/verify-email").count == 43)
        second.signal(SIGTERM)
        _ = try await second.exitStatus()
    }

    /// Runs `executable` to its end: its status and its output and errors together (without
    /// `errors`, its output only). With `environment`, the child's variables are this process's
    /// with those added. The wait is on a thread of its own (`OwnThread`).
    static func run(
        _ executable: String, _ arguments: [String], environment: [String: String] = [:], errors: Bool = true
    ) async throws -> (status: Int32, text: String) {
        let environment = environment.isEmpty ? nil : ProcessInfo.processInfo.environment.merging(environment) { $1 }
        return try await OwnThread.run {
            let process = Spawned()
            process.executableURL = URL(fileURLWithPath: executable)
            (process.arguments, process.environment) = (arguments, environment)
            let pipe = Pipe()
            (process.standardOutput, process.standardError) = (pipe, errors ? pipe : nil)
            try process.run()
            let data = pipe.fileHandleForReading.readDataToEndOfFile()
            process.waitUntilExit()
            return (process.terminationStatus, String(decoding: data, as: UTF8.self))
        }
    }
}
