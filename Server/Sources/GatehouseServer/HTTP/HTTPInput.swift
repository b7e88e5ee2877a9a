import GatehouseCore
import GatehouseWire
import HTTPTypes
import Hummingbird
import NIOCore

/// What every controller reads from a request besides its route: the JSON body (within the
/// configured limit) and the client (its address through trusted proxies, its user agent).
struct HTTPInput: Sendable {
    let resolver: ClientAddressResolver
    let bodyLimit: Int

    /// The request's body limit: the configured one, or a payment source's on its routes (`BodyLimits`).
    func bodyLimit(_ request: Request) -> Int { BodyLimits(general: bodyLimit).limit(forPath: request.uri.path) }

    func body<T: Decodable>(_ type: T.Type, _ request: Request) async throws -> T {
        try await request.decodeJSON(type, limit: bodyLimit(request))
    }

    /// The same, for a body that reads itself when it can (``JSONReadable``).
    func body<T: JSONReadable>(_ type: T.Type, _ request: Request) async throws -> T {
        try await request.decodeJSON(type, limit: bodyLimit(request))
    }

    func client(_ request: Request, _ context: some PeerContext) -> ClientInfo {
        resolver.client(request, context.peerAddress)
    }
}

/// A request's context that knows the TCP peer.
protocol PeerContext {
    var peerAddress: SocketAddress? { get }
}

extension GatehouseRequestContext: PeerContext {}
extension AuthenticatedContext: PeerContext {}

/// `Cache-Control: no-store`, for answers that carry tokens or personal data.
let noStore: HTTPFields = [.cacheControl: "no-store"]

extension ClientAddressResolver {
    /// The caller's address (through trusted proxies) and user agent.
    func client(_ request: Request, _ peer: SocketAddress?) -> ClientInfo {
        ClientInfo(
            ip: clientIP(peer: peer?.ipAddress, forwardedFor: request.headers[.xForwardedFor]),
            userAgent: request.headers[.userAgent])
    }
}

extension Request {
    /// The `Idempotency-Key` header (decision 3), 1–255 printable ASCII characters.
    var idempotencyKey: String? {
        get throws {
            guard let key = headers[.idempotencyKey] else { return nil }
            guard (1...255).contains(key.utf8.count), key.utf8.allSatisfy({ (0x21...0x7e).contains($0) }) else {
                throw GatehouseError.invalidRequest("The Idempotency-Key header must be 1 to 255 printable characters.")
            }
            return key
        }
    }
}

extension HTTPField.Name {
    static let xForwardedFor = HTTPField.Name("X-Forwarded-For")!
    static let idempotencyKey = HTTPField.Name("Idempotency-Key")!
}
