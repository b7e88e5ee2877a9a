import Foundation
import GatehouseCore
import GatehouseStore
import GatehouseWire
import Hummingbird

/// `GET /health`, `GET /.well-known/jwks.json` and `GET /v1/config`.
struct OperationsController {
    /// Asks the database for an answer (`/health`), promptly or not at all: its schema version.
    let ping: @Sendable () async throws -> Int?
    let keys: KeyRing
    /// `GET /v1/config`: encoded once, since it changes only with the preset (which a restart
    /// loads); its `ETag` lets a client revalidate a cached copy (304).
    let configurationDocument: EncodedDocument
    let openAPI: [UInt8]

    init(ping: @escaping @Sendable () async throws -> Int?, keys: KeyRing, publicConfiguration: PublicConfiguration, openAPI: [UInt8]) throws {
        self.ping = ping
        self.keys = keys
        self.configurationDocument = try EncodedDocument(publicConfiguration, cacheControl: "public, max-age=60")
        self.openAPI = openAPI
    }

    func register(on router: Router<GatehouseRequestContext>) {
        router.on(Endpoints.health, use: healthRoute)
        router.on(Endpoints.jwks, use: jwks)
        router.on(Endpoints.configuration, use: configuration)
        // The API described in OpenAPI 3.1 (`docs/openapi.yaml`).
        router.on(Endpoints.openAPI, use: openAPIRoute)
    }

    @Sendable func healthRoute(_ request: Request, context: GatehouseRequestContext) async throws -> Response {
        try await self.health(context)
    }

    @Sendable func jwks(_ request: Request, context: GatehouseRequestContext) async throws -> Response {
        try JSONBody.response(self.keys.jwks, headers: [.cacheControl: "public, max-age=300"])
    }

    @Sendable func configuration(_ request: Request, context: GatehouseRequestContext) async throws -> Response {
        configurationDocument.response(to: request)
    }

    @Sendable func openAPIRoute(_ request: Request, context: GatehouseRequestContext) async throws -> Response {
        Response(
            status: .ok, headers: [.contentType: "application/yaml; charset=utf-8", .cacheControl: "public, max-age=300"],
            body: .init(byteBuffer: ByteBuffer(bytes: self.openAPI)))
    }

    /// 200 when the database answers, 503 when it does not; recovers by itself because every
    /// probe is a fresh query.
    private func health(_ context: GatehouseRequestContext) async throws -> Response {
        do {
            return try JSONBody.response(HealthResponse(status: "ok", schemaVersion: try await ping()))
        } catch {
            context.logger.warning("health check failed", metadata: ["cause": .string("\(error)")])
            return try JSONBody.response(
                HealthResponse(status: "unavailable"), status: .serviceUnavailable, headers: [.retryAfter: "5"])
        }
    }
}
