import Hummingbird

/// `GET /metrics`: Prometheus's text format, served only when configured (`GATEHOUSE_METRICS=on`,
/// or `GATEHOUSE_METRICS_TOKEN`, which then must come as `Authorization: Bearer <token>`).
struct MetricsController {
    /// Prometheus's scrape, in the OpenAPI document though not in `Endpoints` (no client of
    /// the SDK's calls it).
    static let route = Route(.get, "/metrics")
    /// The operation it serves (`OpenAPITests` holds it to the router and the document).
    static let operations = [route.operation]
    let metrics: ServerMetrics
    let token: String?

    func register(on router: Router<GatehouseRequestContext>) {
        guard metrics.isEnabled else { return }
        let group = router.group()
        if let token {
            group.add(middleware: BearerKeyMiddleware(key: AdminKey(key: token, file: nil, generated: false), name: "metrics token"))
        }
        group.on(Self.route, use: scrape)
    }

    @Sendable func scrape(_ request: Request, context: GatehouseRequestContext) async throws -> Response {
        Response(
            status: .ok, headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8", .cacheControl: "no-store"],
            body: .init(byteBuffer: ByteBuffer(bytes: metrics.render())))
    }
}
