import Foundation
import GatehouseCore
import GatehouseStore
import GatehouseWire
import Hummingbird

/// `GET /health`, `GET /.well-known/jwks.json` and `GET /v1/config`.
struct OperationsController {
    let store: any GatehouseStore
    let keys: KeyRing
    let publicConfiguration: PublicConfiguration
    let openAPI: [UInt8]

    func register(on router: Router<GatehouseRequestContext>) {
        router.on(Endpoints.health) { _, context in try await self.health(context) }
        router.on(Endpoints.jwks) { _, _ in
            try JSONBody.response(self.keys.jwks, headers: [.cacheControl: "public, max-age=300"])
        }
        router.on(Endpoints.configuration) { _, _ in
            try JSONBody.response(self.publicConfiguration, headers: [.cacheControl: "public, max-age=60"])
        }
        // The API described in OpenAPI 3.1 (`docs/openapi.yaml`).
        router.on(Endpoints.openAPI) { _, _ in
            Response(
                status: .ok, headers: [.contentType: "application/yaml; charset=utf-8", .cacheControl: "public, max-age=300"],
                body: .init(byteBuffer: ByteBuffer(bytes: self.openAPI)))
        }
    }

    /// 200 when the database answers, 503 when it does not; recovers by itself because every
    /// probe is a fresh query.
    private func health(_ context: GatehouseRequestContext) async throws -> Response {
        do {
            try await store.ping()
            return try JSONBody.response(HealthResponse(status: "ok"))
        } catch {
            context.logger.warning("health check failed", metadata: ["cause": .string("\(error)")])
            return try JSONBody.response(
                HealthResponse(status: "unavailable"), status: .serviceUnavailable, headers: [.retryAfter: "5"])
        }
    }
}
