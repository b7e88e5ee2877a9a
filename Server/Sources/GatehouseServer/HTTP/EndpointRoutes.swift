import GatehouseWire
import HTTPTypes
import Hummingbird

extension RouterMethods {
    /// Mounts `handler` at the method and path `endpoint` declares in `Endpoints` (Wire), the one
    /// place the SDK reads them from too.
    @discardableResult
    func on<Body, Answer>(
        _ endpoint: Endpoint<Body, Answer>, use handler: @escaping @Sendable (Request, Context) async throws -> Response
    ) -> Self {
        on(RouterPath(endpoint.path.template), method: HTTPRequest.Method(rawValue: endpoint.method.rawValue)!, use: handler)
    }
}
