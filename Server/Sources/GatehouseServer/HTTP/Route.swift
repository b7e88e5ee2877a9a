import HTTPTypes
import Hummingbird

/// A route the server serves outside `Endpoints` (the console's pages, `/auth/v1`, `/metrics`):
/// its method and path, declared once in a table (`ConsoleRoutes`, `GoTrueRoutes`,
/// `OperationRoutes`) that the router registers and `OpenAPITests` reads.
struct Route: Sendable, Hashable {
    let method: HTTPRequest.Method
    /// The path in OpenAPI's spelling, captures in braces: `/admin/users/{id}`.
    let path: String

    init(_ method: HTTPRequest.Method, _ path: String) {
        self.method = method
        self.path = path
    }

    /// `METHOD /path`, as the OpenAPI document and the router are compared.
    var operation: String { "\(method.rawValue) \(path)" }
}

extension RouterMethods {
    /// Mounts `handler` at `route`'s method and path.
    @discardableResult
    func on(_ route: Route, use handler: @escaping @Sendable (Request, Context) async throws -> Response) -> Self {
        on(RouterPath(route.path), method: route.method, use: handler)
    }
}
