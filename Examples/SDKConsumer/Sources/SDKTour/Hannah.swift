// Hannah's journeys from docs/sdk.md (issue 64): the magic link and its trial, a number added to
// the profile, the phone way in (and a second sign-in refused for a minute), Stripe's checkout and
// portal against the tests' Stripe stand-in, and an authenticator app as a second factor.
import Foundation
import GatehouseClient
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

func hannah(_ server: URL, stripe: URL?) async throws {
    print("hannah (\(server))")
    let phone = Phone()
    defer { phone.remove() }
    let app = try phone.launch(server)
    let configuration = try await app.loadConfiguration()
    let openApp = try URL(string: configuration.app.openAppURL ?? "").orThrow("the preset names the app's link")
    try await app.sendMagicLink(email: "tour@example.com")
    let token = try await latestMagicLinkToken(server, to: "tour@example.com")
    let link = try URL(string: "\(openApp.absoluteString)?token=\(token)").orThrow("a link")
    guard case .signedIn(let result)? = try await app.handle(url: link) else {
        throw TourFailure(description: "the magic link did not sign in")
    }
    try expect(result.created, "the magic link created the account")
    let snapshot = try await app.entitlements()
    try expect(snapshot.plan == .trial && snapshot.trial?.daysLeft == 6, "a 7-day trial starts with the account (day 1: 6 days left after today)")
    try expect(try await app.decide("ai_chat").allowed, "the trial allows the costly endpoints")

    try await addNumber(app, server)
    if let stripe {
        try await subscribeOnTheWeb(app, server, stripe: stripe)
    } else {
        print("  (no Stripe stand-in given: the web subscription is not walked)")
    }
    try await twoStepSignIn(app, server, link: openApp)
    try await phoneSignIn(server)
}

/// Profile settings: a number added with the code texted to it (the sign-in is recent).
@MainActor
func addNumber(_ app: Gatehouse, _ server: URL) async throws {
    let settings = PhoneVerificationModel(client: app)
    await settings.load()
    try expect(settings.currentNumber == nil && settings.title == "Add a phone number", "the profile has no number yet")
    settings.phone = "(415) 555-0160"
    try expect(await settings.send(), "a code goes to the profile's new number \(settings.errorMessage ?? "")")
    let code = try await latestSMSCode(server, to: "+14155550160")
    settings.code = String(code.prefix(5))
    try expect(!settings.canSubmitCode, "five digits keep the code button off")
    let refused = await settings.submitCode()
    try expect(!refused && settings.errorMessage == "Enter the 6-digit code from the text message.", "five digits are refused on the device, in words")
    settings.code = code
    let verified = await settings.submitCode()
    try expect(verified && settings.user?.phone == "+14155550160" && settings.user?.phoneVerified == true, "the code adds the number, verified")
}

/// Hannah's phone way in, from the onboarding: a new account with its trial. A second sign-in
/// with the same number within the minute is refused with the wait in seconds, and the resend
/// button of docs/sdk.md turns on when its countdown ends.
@MainActor
func phoneSignIn(_ server: URL) async throws {
    let phone = Phone()
    defer { phone.remove() }
    let app = try phone.launch(server)
    let onboarding = MagicLinkOnboarding(client: app)
    await onboarding.start()
    let signIn = try await onboarding.usePhone().orThrow("Hannah's onboarding offers a phone number")
    try expect(onboarding.phoneLabel == "Sign in with a phone number", "the address step offers the phone")
    signIn.phone = "(415) 555-0142"
    try expect(signIn.canSend && sendButton(signIn) == ("Text me a code", true), "the send button is on for a number")
    try expect(await signIn.send(), "a code is texted \(signIn.errorMessage ?? "")")
    try expect(signIn.sentMessage == "We texted a 6-digit code to (415) 555-0142.", "the model says where the code went")
    let code = try await latestSMSCode(server, to: "+14155550142")
    signIn.code = String(code.prefix(3)) + " " + String(code.suffix(3))
    let signedIn = await signIn.submitCode()
    try expect(signedIn && onboarding.step == .signedIn(newAccount: true), "the code signs up: the onboarding's step is signedIn")
    try expect(onboarding.trialStartedMessage == "Your 7-day free trial has started. No payment details required.", "the trial is announced")
    try expect(await app.state.user?.phone == "+14155550142", "the account has the number")
    try await app.signOut()

    // Signed out, the same number at once: one code a minute to a number.
    let clock = TourClock()
    let again = PhoneSignInModel(client: app, now: { clock.now })
    await again.load()
    again.phone = "(415) 555-0142"
    let sent = await again.send()
    let wait = again.secondsUntilResend
    try expect(!sent && again.step == .number && (1...60).contains(wait), "a second sign-in within the minute is refused")
    try expect(
        again.errorMessage == "Too many codes were asked for. You can ask for a new one in \(wait) s.", "the refusal says the wait in seconds")
    try expect(resendButton(again) == ("Send a new code in \(wait) s", false), "the resend button counts the wait down, off")
    clock.advance(by: TimeInterval(wait))
    try expect(resendButton(again) == ("Send a new code", true), "the resend button turns on when its countdown ends")
    try expect(again.errorMessage == nil && again.canSend, "the wait is over")
}

/// Stripe's checkout for a price the preset sells (read from the configuration), paid on the
/// stand-in's page, the webhook delivered, the plan read when the app is back; then the portal.
func subscribeOnTheWeb(_ app: Gatehouse, _ server: URL, stripe: URL) async throws {
    let prices = try await app.loadConfiguration().stripe.prices
    let premium = try prices.keys.sorted().first { prices[$0]?.tier == "premium" }.orThrow("a premium price in stripe.prices")
    do {
        _ = try await app.stripeCheckoutURL(price: "price_1QpremiumMonthly")
        throw TourFailure(description: "a price the preset does not sell opened a page")
    } catch let error as GatehouseClientError {
        try expect(
            error.code == .unknownPrice && error.message == "This plan is not available. Please choose another one.",
            "a price the preset does not sell is refused in words")
    }
    let page = try await app.stripeCheckoutURL(price: premium)
    try expect(page.host == stripe.host && page.port == stripe.port && page.path.hasPrefix("/pay/cs_"), "checkout answers Stripe's page")
    let session = page.lastPathComponent
    let now = Int(Date().timeIntervalSince1970)
    _ = try await StripeStandIn.control(
        stripe, "checkout/\(session)/complete", ["status": "active", "period_start": now, "period_end": now + 30 * 86_400])
    try await StripeStandIn.deliver("checkout.session.completed", session: session, from: stripe, to: server)
    let back = try await app.didReturnFromStripe().orThrow("a snapshot once back from Stripe")
    try expect(
        back.planState == .pro && back.tier == "premium" && back.subscription?.planSource == .stripe, "back in the app, the plan is Stripe's premium")
    let portal = try await app.stripePortalURL()
    try expect(portal.host == stripe.host && portal.path.hasPrefix("/portal/"), "the billing portal opens for the account")
}

/// An authenticator app turned on, then a sign-in by mail that asks for its code: an incomplete
/// code and the confirming code again (in the same 30 seconds) are refused in words, the latter
/// spending no try, and the app's next code signs in.
@MainActor
func twoStepSignIn(_ app: Gatehouse, _ server: URL, link openApp: URL) async throws {
    // The next sign-in's link is asked for first: one mail a minute goes to an address (the
    // server's `retry_after` says how long to wait), and the confirming code is typed again
    // within its 30 seconds.
    do throws(GatehouseClientError) {
        try await app.sendMagicLink(email: "tour@example.com")
    } catch {
        guard error.code == .rateLimited, let wait = error.retryAfter else { throw error }
        print("  (one mail a minute to an address: waiting \(wait) s, as the server asks)")
        try await Task.sleep(for: .seconds(wait))
        try await app.sendMagicLink(email: "tour@example.com")
    }
    let token = try await latestMagicLinkToken(server, to: "tour@example.com")

    let enrollment = try await app.enrollTOTP(name: "Tour phone")
    let authenticator = try Authenticator.app(secret: enrollment.totp.secret)
    let confirming = authenticator.code(at: Date())
    let recoveryCodes = try await app.confirmFactor(id: enrollment.id, code: confirming).recoveryCodes ?? []
    try expect(
        recoveryCodes.count == 10 && recoveryCodes.allSatisfy { $0.range(of: #"^[a-z2-7]{4}(-[a-z2-7]{4}){3}$"#, options: .regularExpression) != nil },
        "ten recovery codes of the documented form")
    try await app.signOut()

    do {
        _ = try await app.handle(url: try URL(string: "\(openApp.absoluteString)?token=\(token)").orThrow("a link"))
        throw TourFailure(description: "the magic link signed in without the second factor")
    } catch let error as GatehouseClientError {
        try expect(error.code == .secondFactorRequired, "the link asks for the second factor (\(error.code.rawValue))")
    }
    let step = try await SecondFactorModel.pending(client: app).orThrow("the code step of the waiting sign-in")
    step.code = "12345"
    let short = await step.verify()
    try expect(!short && step.errorMessage == "Enter the 6-digit code from your authenticator app.", "five digits are refused in words")
    step.usesRecoveryCode = true
    step.code = "abcd-efgh"
    let malformed = await step.verify()
    try expect(
        !malformed && step.errorMessage == "Enter a recovery code as you saved it: 16 letters and digits, like abcd-efgh-2345-ijkl.",
        "a recovery code of another form is refused in words")
    step.usesRecoveryCode = false
    step.code = confirming
    let reused = await step.verify()
    try expect(
        !reused && step.errorMessage == "That code was used already. Each code works once: wait for the next code in your authenticator app.",
        "the confirming code again says a code works once")
    try expect(step.attemptsLeft == 5 && step.outcome == nil, "and spends no try")
    step.code = authenticator.code(at: Date().addingTimeInterval(30))
    try expect(await step.verify(), "the app's next code signs in \(step.errorMessage ?? "")")
    let (user, assurance) = (await app.state.user, await app.assurance)
    try expect(user?.email == "tour@example.com" && assurance?.level == .aal2, "signed in at aal2")
}

/// docs/sdk.md's two buttons of the phone way in.
@MainActor func sendButton(_ phone: PhoneSignInModel) -> (label: String, enabled: Bool) { (phone.sendLabel, phone.canSend) }
@MainActor func resendButton(_ phone: PhoneSignInModel) -> (label: String, enabled: Bool) { (phone.resendLabel, phone.canResend) }

/// The clock a phone model reads, moved by the tour instead of waiting.
final class TourClock: Sendable {
    private let offset = OffsetBox()
    var now: Date { Date().addingTimeInterval(offset.value) }
    func advance(by seconds: TimeInterval) { offset.value += seconds }
}

// SAFETY: the offset is read and written under the lock only.
final class OffsetBox: @unchecked Sendable {
    private let lock = NSLock()
    private var seconds: TimeInterval = 0
    var value: TimeInterval {
        get { lock.withLock { seconds } }
        set { lock.withLock { seconds = newValue } }
    }
}

/// The code of the newest text in the development outbox to `number` (E.164): its last line is
/// `@<host> #<code>`.
func latestSMSCode(_ server: URL, to number: String) async throws -> String {
    for _ in 0..<100 {
        let (data, _) = try await URLSession.shared.data(from: server.appendingPathComponent("dev/outbox"))
        let list = try JSONDecoder().decode(OutboxList.self, from: data)
        // The newest text's, once it is sent.
        if let text = list.messages.first(where: { $0.kind == "sms" && $0.to == number })?.text,
            let range = text.range(of: #"#[0-9]{6}\s*$"#, options: .regularExpression)
        {
            return String(text[range].dropFirst().prefix(6))
        }
        try await Task.sleep(for: .milliseconds(100))
    }
    throw TourFailure(description: "no text message to \(number)")
}

/// The tests' Stripe stand-in (Server/Tests/support/stripe_standin.py), which plays Stripe:
/// its control API completes a checkout as the customer would and makes Stripe's signed event,
/// which the tour delivers to Gatehouse's webhook as Stripe would.
enum StripeStandIn {
    @discardableResult
    static func control(_ standIn: URL, _ path: String, _ body: [String: Any]) async throws -> [String: Any] {
        var request = URLRequest(url: standIn.appendingPathComponent("_control/\(path)"))
        request.httpMethod = "POST"
        request.httpBody = try JSONSerialization.data(withJSONObject: body)
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        let (data, response) = try await URLSession.shared.data(for: request)
        guard (response as? HTTPURLResponse)?.statusCode == 200, let answer = try JSONSerialization.jsonObject(with: data) as? [String: Any] else {
            throw TourFailure(description: "the Stripe stand-in refused \(path): \(String(decoding: data, as: UTF8.self))")
        }
        return answer
    }

    /// Makes `type`'s event for the checkout `session`, signs it and posts it to the server's
    /// `/webhooks/stripe`, which must answer 200.
    static func deliver(_ type: String, session: String, from standIn: URL, to server: URL) async throws {
        let event = try (try await control(standIn, "events", ["type": type, "session": session])["id"] as? String).orThrow("an event id")
        let signed = try await control(standIn, "sign", ["event": event])
        var request = URLRequest(url: server.appendingPathComponent("webhooks/stripe"))
        request.httpMethod = "POST"
        request.httpBody = Data(try (signed["payload"] as? String).orThrow("the event's payload").utf8)
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        request.setValue(try (signed["header"] as? String).orThrow("the signature"), forHTTPHeaderField: "Stripe-Signature")
        let (data, response) = try await URLSession.shared.data(for: request)
        try expect((response as? HTTPURLResponse)?.statusCode == 200, "Stripe's \(type) reaches the webhook \(String(decoding: data, as: UTF8.self))")
    }
}
