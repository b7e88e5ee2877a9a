import Foundation
import GatehouseCore
import GatehouseServer
import GatehouseTestSupport
import GatehouseWire
import Testing

/// Faults (issue 9, item 4): the server's clock five minutes ahead of or behind the rest of the
/// world (libfaketime, as the `faketime` tool uses it), while the tests, Google's stand-in and
/// the database keep the real time. The server judges provider tokens by its own clock with
/// its leeway, its own tokens keep working, and login throttling is unaffected (nothing mixes
/// the database's clock with the server's).
@Suite struct ClockSkewTests {
    /// Debian's libfaketime (its variant for threaded programs), or the one `GATEHOUSE_TEST_LIBFAKETIME` names.
    static let library: String? = {
        let candidates = [ProcessInfo.processInfo.environment["GATEHOUSE_TEST_LIBFAKETIME"] ?? "",
                          "/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1", "/usr/lib/aarch64-linux-gnu/faketime/libfaketimeMT.so.1"]
        return candidates.first { !$0.isEmpty && FileManager.default.fileExists(atPath: $0) }
    }()

    static let arguments: [(String, Backend)] = ["+5m", "-5m"].flatMap { skew in Backend.available.map { (skew, $0) } }

    @Test(.requires(library != nil, "libfaketime"), arguments: arguments)
    func skewedServerKeepsLeewayAndLimits(_ skew: String, _ backend: Backend) async throws {
        let offset: TimeInterval = skew == "+5m" ? 300 : -300
        let google = try FakeProvider(issuer: "https://accounts.google.com", audience: "skew.apps.googleusercontent.com")
        let (url, cleanup) = try await TestDatabase.make(backend)
        defer { Task { await cleanup() } }
        try await google.serve { keys in
            let server = try ServerProcess(environment: ServerProcess.environment(database: url.environmentValue, [
                "GATEHOUSE_GOOGLE_AUDIENCES": google.audience, "GATEHOUSE_GOOGLE_JWKS_URL": keys.absoluteString,
                // The monotonic clock is shifted too: libdispatch programs its timers from it, and
                // libfaketime converts timer deadlines assuming it is faked (left real, every
                // timer fired at once and the server spun).
                "LD_PRELOAD": try #require(Self.library), "FAKETIME": skew,
            ]), launcher: "/usr/bin/env")  // Started directly with the library preloaded, Swift saw no arguments.
            let base = try await server.baseURL()
            try await check(base: base, offset: offset, google: google, server: server)
            server.signal(SIGTERM)
            #expect(try await server.exitStatus() == 0)
        }
    }

    private func check(base: URL, offset: TimeInterval, google: FakeProvider, server: ServerProcess) async throws {
        let json = ["Content-Type": "application/json"]
        // The skew took hold: the server's Date header is five minutes off.
        let health = try await HTTP.request(base.appendingPathComponent("health"))
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss zzz"
        let serverDate = try #require(health.headers["date"].flatMap(formatter.date(from:)))
        #expect(abs(serverDate.timeIntervalSinceNow - offset) < 30, "the server's clock is not skewed: \(serverDate)")

        // The server runs the `default` preset.
        let preset = try PresetLibrary.load("default").get()
        let leeway = TimeInterval(preset.tokens.leewaySeconds)
        var serverNow: Date { Date().addingTimeInterval(offset) }

        // Provider tokens: `exp` and `iat` judged by the server's clock, with its leeway (15 s
        // inside and outside the edge, since time passes between minting and checking). Each is
        // minted just before it is sent; the first sign-in fetches the key set.
        func signIn(_ label: String, exp: TimeInterval, iat: TimeInterval) async throws -> HTTP.Reply {
            let now = serverNow
            let token = try google.token(
                sub: "skew-\(label)",
                extra: ["exp": Int(now.addingTimeInterval(exp).timeIntervalSince1970), "iat": Int(now.addingTimeInterval(iat).timeIntervalSince1970)])
            return try await HTTP.request(
                base.appendingPathComponent("v1/auth/google"), method: "POST", headers: json,
                body: try JSONEncoder().encode(ProviderSignInRequest(idToken: token)))
        }
        // Google's stand-in answers from this test process, which the parallel suite keeps busy:
        // its first answer can miss the server's 5-s fetch timeout. The server tries again 5 s
        // after a failure, so the warm-up does too, for as long as three of those pauses.
        var warm = try await signIn("warm-up", exp: 600, iat: -60)
        let warmUntil = Date().addingTimeInterval(40)
        while warm.status == 503, Date() < warmUntil {
            try await Task.sleep(for: .seconds(2))
            warm = try await signIn("warm-up", exp: 600, iat: -60)
        }
        #expect(warm.status == 200, "\(warm.text)\n\(server.standardError)")
        for (label, exp, iat, status) in [
            ("exp-inside", -leeway + 15, -120, 200), ("exp-outside", -leeway - 15, -120, 401),
            ("iat-inside", 600, leeway - 15, 200), ("iat-outside", 600, leeway + 15, 401),
        ] {
            let reply = try await signIn(label, exp: exp, iat: iat)
            #expect(reply.status == status, "\(label): \(reply.status) \(reply.text)")
        }

        // The server's own tokens: issued and checked on one clock, refreshed too.
        let signup = try await HTTP.request(
            base.appendingPathComponent("v1/auth/signup"), method: "POST", headers: json,
            body: Data(#"{"email": "skew@example.com", "password": "correct horse battery"}"#.utf8))
        #expect(signup.status == 201)
        let session = try signup.json(AuthResponse.self).session
        #expect(abs(TimeInterval(session.expiresAt) - serverNow.timeIntervalSince1970 - TimeInterval(session.expiresIn)) < 30)
        let me = try await HTTP.request(base.appendingPathComponent("v1/me"), headers: ["Authorization": "Bearer \(session.accessToken)"])
        #expect(me.status == 200)
        let refresh = try await HTTP.request(
            base.appendingPathComponent("v1/auth/refresh"), method: "POST", headers: json,
            body: Data(#"{"refresh_token": "\#(session.refreshToken)"}"#.utf8))
        #expect(refresh.status == 200)

        // Login throttling: the failures the preset allows, then a lockout whose Retry-After is
        // the preset's first lockout, not five minutes more or less.
        for _ in 0..<preset.throttling.loginFailuresBeforeLockout {
            let wrong = try await HTTP.request(
                base.appendingPathComponent("v1/auth/login"), method: "POST", headers: json,
                body: Data(#"{"email": "skew@example.com", "password": "wrong password here"}"#.utf8))
            #expect(wrong.status == 401)
        }
        let locked = try await HTTP.request(
            base.appendingPathComponent("v1/auth/login"), method: "POST", headers: json,
            body: Data(#"{"email": "skew@example.com", "password": "correct horse battery"}"#.utf8))
        #expect(locked.status == 429)
        let retryAfter = try #require(locked.headers["retry-after"].flatMap(Int.init))
        #expect(retryAfter > 0 && retryAfter <= preset.throttling.lockoutBaseSeconds, "Retry-After \(retryAfter)")
    }
}
