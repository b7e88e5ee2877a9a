// The SDK as a new app uses it, written from docs/sdk.md alone, against live servers with the
// handz, oklah and hannah presets (scripts/sdk-consumer starts them, and the tests' Stripe
// stand-in that hannah's server is pointed at):
//
//   sdk-tour handz=http://127.0.0.1:P1 oklah=http://127.0.0.1:P2 hannah=http://127.0.0.1:P3 stripe=http://127.0.0.1:P4
//
// Each step checks what the docs promise and the run fails on the first broken promise.
import Foundation
import GatehouseClient
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

struct TourFailure: Error, CustomStringConvertible {
    let description: String
}

func expect(_ condition: Bool, _ what: String) throws {
    guard condition else { throw TourFailure(description: what) }
    print("  ok: \(what)")
}

/// A phone: a token store that outlives the app (the Keychain on iOS, a file here) and the
/// app's container.
struct Phone {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("sdk-tour-\(UUID().uuidString)")

    func launch(_ server: URL, appLinks: [URL] = []) throws -> Gatehouse {
        var configuration = try ClientConfiguration(baseURL: server)
        configuration.appLinks = appLinks
        return Gatehouse(
            configuration: configuration,
            tokenStore: FileTokenStore(url: directory.appendingPathComponent("keychain/session.json")),
            storage: DirectoryStorage(directory: directory.appendingPathComponent("app")))
    }

    func remove() { try? FileManager.default.removeItem(at: directory) }
}

func handz(_ server: URL) async throws {
    print("handz (\(server))")
    let phone = Phone()
    defer { phone.remove() }
    let first = try phone.launch(server)
    try await first.loadConfiguration()
    let signedUp = try await first.signUp(email: "tour@example.com", password: "correct horse battery")
    try expect(signedUp.created && signedUp.user.email == "tour@example.com", "sign up returns a SignInResult for a new account")

    // A relaunch that never calls restore(): the first call confirms the saved session.
    let app = try phone.launch(server)
    var events = await app.authStateChanges.makeAsyncIterator()
    try expect(await events.next() == .initial(.restoring), "before any call the state is restoring")
    let snapshot = try await app.entitlements()
    try expect(snapshot.plan == .free, "the relaunched app sees the Free plan")
    try expect(await events.next() == .signedIn(signedUp.user), "the relaunch announces signedIn")
    let cap = try await app.decide("save_flow", context: ["saved_count": 2], surface: .flowSave)
    try expect(!cap.allowed && cap.reasonCode == "flow_cap_reached", "a third saved flow meets the Free cap, not the account gate")
    try expect(cap == (try await app.check("save_flow", context: ["saved_count": 2])), "the device decides as the server does")

    let spent = try await app.spendCredit("practice", action: "practice_saved_flow", idempotencyKey: "tour-practice-1")
    try expect(spent.remaining == 2, "one practice credit spent, two left")
    let again = try await app.spendCredit("practice", action: "practice_saved_flow", idempotencyKey: "tour-practice-1")
    try expect(again.remaining == 2, "the same key spends nothing more")

    try expect(try await app.handle(url: URL(string: "otherapp://oauth/callback?token=abc")!) == nil, "another app's URL is not Gatehouse's")
    do {
        try await app.signIn(email: "tour@example.com", password: "not the password")
        throw TourFailure(description: "a wrong password signed in")
    } catch let error as GatehouseClientError {
        try expect(error.code == .invalidCredentials && error.localizedDescription == error.message, "errors show the server's message")
    }
    try await app.signOut(scope: .global)
    try expect(await app.state == .signedOut(.userSignedOut), "signed out everywhere")
}

func oklah(_ server: URL) async throws {
    print("oklah (\(server))")
    let phone = Phone()
    defer { phone.remove() }
    let app = try phone.launch(server)
    try expect(await app.restore() == .signedOut(nil), "a first launch has no session")
    let anonymous = try await app.signInAnonymously()
    try expect(anonymous.nameSuggestions.count == 3 && anonymous.user.email == nil, "an anonymous account with three names and no address")
    let named = try await app.chooseName(anonymous.nameSuggestions[0])
    try expect(named.displayName == anonymous.nameSuggestions[0], "the chosen name is the account's")
    let relaunched = try phone.launch(server)
    try expect(await relaunched.restore() == .restored(named), "the session survives a restart")
}

/// The token of the newest magic link in the development outbox (`GET /dev/outbox`).
func latestMagicLinkToken(_ server: URL, to address: String) async throws -> String {
    for _ in 0..<100 {
        let (data, _) = try await URLSession.shared.data(from: server.appendingPathComponent("dev/outbox"))
        let list = try JSONDecoder().decode(OutboxList.self, from: data)
        // The newest link's text, once it is sent (an older link's would be spent already).
        if let text = list.messages.first(where: { $0.kind == "magic_link" && $0.to == address })?.text,
            let range = text.range(of: #"token=[A-Za-z0-9_-]+"#, options: .regularExpression)
        {
            return String(text[range].dropFirst("token=".count))
        }
        try await Task.sleep(for: .milliseconds(100))
    }
    throw TourFailure(description: "no magic link mail for \(address)")
}

extension Optional {
    func orThrow(_ what: String) throws -> Wrapped {
        guard let self else { throw TourFailure(description: "missing: \(what)") }
        return self
    }
}

var servers: [String: URL] = [:]
for argument in CommandLine.arguments.dropFirst() {
    let parts = argument.split(separator: "=", maxSplits: 1).map(String.init)
    guard parts.count == 2, let url = URL(string: parts[1]) else { fatalError("usage: sdk-tour preset=URL…") }
    servers[parts[0]] = url
}
do {
    if let url = servers["handz"] { try await handz(url) }
    if let url = servers["oklah"] { try await oklah(url) }
    try expect(Authenticator.passesRFC6238, "the tour's authenticator app computes RFC 6238's codes")
    if let url = servers["hannah"] { try await hannah(url, stripe: servers["stripe"]) }
    print("sdk-tour: every step held")
} catch {
    print("sdk-tour: FAILED: \(error)")
    exit(1)
}
