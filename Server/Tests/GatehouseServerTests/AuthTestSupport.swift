import Foundation
import GatehouseCore
import GatehouseServer
import GatehouseStore
import GatehouseWire
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Testing

/// Calls the auth endpoints the way an app does.
struct AuthClient {
    let client: any TestClientProtocol

    func post(_ uri: String, _ json: String, token: String? = nil, headers extra: HTTPFields = [:]) async throws -> TestResponse {
        var headers: HTTPFields = [.contentType: "application/json"]
        if let token { headers[.authorization] = "Bearer \(token)" }
        for field in extra { headers.append(field) }
        return try await client.execute(uri: uri, method: .post, headers: headers, body: ByteBuffer(string: json))
    }

    func get(_ uri: String, token: String?) async throws -> TestResponse {
        var headers: HTTPFields = [:]
        if let token { headers[.authorization] = "Bearer \(token)" }
        return try await client.execute(uri: uri, method: .get, headers: headers)
    }

    func signup(_ email: String, _ password: String = "correct horse battery") async throws -> TestResponse {
        try await post("/v1/auth/signup", Self.credentials(email, password))
    }

    func login(_ email: String, _ password: String = "correct horse battery") async throws -> TestResponse {
        try await post("/v1/auth/login", Self.credentials(email, password))
    }

    func refresh(_ token: String) async throws -> TestResponse {
        try await post("/v1/auth/refresh", #"{"refresh_token": "\#(token)"}"#)
    }

    /// Signs up and returns the session, failing the test when sign-up fails.
    func account(_ email: String, _ password: String = "correct horse battery") async throws -> AuthResponse {
        let response = try await signup(email, password)
        #expect(response.status == .created, "\(response.text)")
        return try response.json(AuthResponse.self)
    }

    static func credentials(_ email: String, _ password: String) -> String {
        let data = try! JSONSerialization.data(withJSONObject: ["email": email, "password": password])
        return String(decoding: data, as: UTF8.self)
    }
}

/// The claims part of a JWT, decoded without checking anything.
func jwtParts(_ token: String) throws -> (header: [String: Any], claims: [String: Any]) {
    let parts = token.split(separator: ".").map(String.init)
    func decode(_ part: String) throws -> [String: Any] {
        var base64 = part.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while base64.count % 4 != 0 { base64 += "=" }
        let data = try #require(Data(base64Encoded: base64))
        return try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
    }
    return (try decode(parts[0]), try decode(parts[1]))
}
