import Foundation

/// The Google Play Developer API stand-in (`Tests/support/google_play_standin.py`) on a loopback
/// port: every API request checked against the androidpublisher v3 discovery document shipped in
/// the pinned google-api-python-client, its own OAuth token endpoint for the service account's
/// JWT bearer grant, and Google's key server for Pub/Sub push tokens. Its control API plays the
/// buyer and Google (purchases, their states, voids, pushes).
final class GooglePlayStandIn: Sendable {
    /// The google-api-python-client whose discovery document the stand-in checks against.
    static let clientVersion = "2.202.0"
    static let packageName = "app.gatehouse.test"

    let process: Spawned
    let input: Pipe
    let port: Int

    var url: String { "http://127.0.0.1:\(port)" }

    init() async throws {
        guard let python = StripeStandIn.python else { throw ProcessError("GATEHOUSE_TEST_PYTHON is not set; run make test") }
        let started = try await Spawned.helper(python: python, [
            StripeStandIn.support.appendingPathComponent("google_play_standin.py").path, "--port", "0",
            "--client-version", Self.clientVersion, "--package-name", Self.packageName,
        ])
        (process, input) = (started.process, started.input)
        guard started.firstLine.hasPrefix("READY "), let port = Int(started.firstLine.dropFirst(6).trimmingCharacters(in: .whitespacesAndNewlines)) else {
            try? input.fileHandleForWriting.close()
            throw ProcessError("the Google Play stand-in did not start: \(started.firstLine)")
        }
        self.port = port
    }

    func stop() { try? input.fileHandleForWriting.close() }

    /// The service account's key file, as Google's console downloads it.
    func serviceAccountKeyFile() async throws -> Data { try await control("GET", "service_account") }

    /// A purchase as the buyer's device made it (`product_id`, `expiry`, `state`, …); its token.
    func purchase(_ fields: [String: Any]) async throws -> String {
        let view = try JSONSerialization.jsonObject(with: try await control("POST", "purchases", fields)) as? [String: Any]
        guard let token = (view?["purchase"] as? [String: Any])?["token"] as? String else { throw ProcessError("a purchase without a token") }
        return token
    }

    func update(_ token: String, _ fields: [String: Any]) async throws { _ = try await control("POST", "purchases/\(token)", fields) }
    func forget(_ token: String) async throws { _ = try await control("POST", "purchases/\(token)/forget", [:]) }

    /// Sets the stand-in's clock (tokens and windows are checked against it).
    func setClock(_ now: Date) async throws { _ = try await control("POST", "clock", ["now": Int(now.timeIntervalSince1970)]) }

    /// Every acknowledge call: token, subscription id, outcome.
    func acknowledgements() async throws -> [[String: Any]] {
        let answer = try JSONSerialization.jsonObject(with: try await control("GET", "acknowledgements")) as? [String: Any]
        return answer?["acknowledgements"] as? [[String: Any]] ?? []
    }

    /// Every `subscriptionsv2.cancel` call: token, cancellation type, status.
    func cancellations() async throws -> [[String: Any]] {
        let answer = try JSONSerialization.jsonObject(with: try await control("GET", "cancellations")) as? [String: Any]
        return answer?["cancellations"] as? [[String: Any]] ?? []
    }

    /// Requests the discovery document does not describe, and answers that break its schemas.
    func violations() async throws -> [String] {
        let answer = try JSONSerialization.jsonObject(with: try await control("GET", "violations")) as? [String: Any]
        return (answer?["violations"] as? [Any] ?? []).map { "\($0)" }
    }

    /// The stand-in's URLs and names (`jwks_uri`, `push_audience`, `push_email`, …).
    func info() async throws -> [String: Any] {
        try JSONSerialization.jsonObject(with: try await control("GET", "info")) as? [String: Any] ?? [:]
    }

    /// A Pub/Sub push as Google sends it (`kind`, `purchase_token`, `notification_type`, and
    /// `token` for its OIDC token's options): the body's text and the `Authorization` header.
    /// `at`: the token's `iat` (the server's clock in a test that holds it still; the stand-in's
    /// own runs on), unless `token` says otherwise.
    func push(_ fields: [String: Any], at: Date? = nil) async throws -> (body: String, authorization: String, messageID: String) {
        var fields = fields
        if let at {
            var token = fields["token"] as? [String: Any] ?? [:]
            if token["issued_at"] == nil { token["issued_at"] = Int(at.timeIntervalSince1970) }
            fields["token"] = token
        }
        let answer = try JSONSerialization.jsonObject(with: try await control("POST", "push", fields)) as? [String: Any]
        guard let body = answer?["text"] as? String, let authorization = answer?["authorization"] as? String,
            let id = answer?["message_id"] as? String
        else { throw ProcessError("a push without a body or token") }
        return (body, authorization, id)
    }

    /// Voids a purchase (a refund or chargeback): listed by `voidedpurchases.list` from now on.
    /// Answers the voided order's id.
    @discardableResult
    func void(_ token: String, _ fields: [String: Any] = [:]) async throws -> String {
        let answer = try JSONSerialization.jsonObject(with: try await control("POST", "purchases/\(token)/void", fields)) as? [String: Any]
        return (answer?["voided"] as? [String: Any])?["orderId"] as? String ?? ""
    }

    /// The next `count` valid calls of `method` (a discovery method id) fail with `status`.
    func fail(_ method: String, count: Int, status: Int = 503) async throws {
        _ = try await control("POST", "fail", ["method": method, "count": count, "status": status])
    }

    /// How many described calls each method got.
    func callCounts() async throws -> [String: Int] {
        let answer = try JSONSerialization.jsonObject(with: try await control("GET", "calls")) as? [String: Any]
        return answer?["counts"] as? [String: Int] ?? [:]
    }

    private func control(_ method: String, _ path: String, _ body: [String: Any]? = nil) async throws -> Data {
        try await StandInControl.call(url, "Google Play", method, path, body)
    }
}
