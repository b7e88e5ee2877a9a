import Foundation
import GatehouseCore
@testable import GatehouseServer
import GatehouseTestSupport
import GatehouseWire
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Synchronization
import Testing

/// `docs/openapi.yaml` describes exactly the routes the server serves, and Wire's route table
/// (`Endpoints`) declares exactly those.
@Suite struct OpenAPITests {
    /// `METHOD /path` for each operation under `paths:` (two-space path keys, four-space methods).
    static func documentedOperations(_ yaml: String) -> Set<String> {
        var operations = Set<String>()
        var inPaths = false
        var path: String?
        for line in yaml.split(separator: "\n", omittingEmptySubsequences: false) {
            if !line.hasPrefix(" ") && !line.isEmpty && !line.hasPrefix("#") { inPaths = line == "paths:" }
            guard inPaths else { continue }
            if line.hasPrefix("  /"), line.hasSuffix(":"), !line.hasPrefix("   ") {
                path = String(line.dropFirst(2).dropLast()).trimmingCharacters(in: CharacterSet(charactersIn: "'\""))
            } else if let path, line.hasPrefix("    "), !line.hasPrefix("     "),
                let method = ["get", "post", "put", "patch", "delete"].first(where: { line == "    \($0):" })
            {
                operations.insert("\(method.uppercased()) \(path)")
            }
        }
        return operations
    }

    /// What one set has and the other lacks, one `METHOD /path` a line; empty when they agree.
    static func difference(_ a: (name: String, set: Set<String>), _ b: (name: String, set: Set<String>)) -> String {
        let onlyA = a.set.subtracting(b.set).sorted(), onlyB = b.set.subtracting(a.set).sorted()
        guard !onlyA.isEmpty || !onlyB.isEmpty else { return "" }
        return (onlyA.map { "only in \(a.name): \($0)" } + onlyB.map { "only in \(b.name): \($0)" }).joined(separator: "\n")
    }

    /// The names declared `static let name = Endpoint<…>` in `Sources/GatehouseWire/Endpoints.swift`.
    static func declaredEndpoints(_ source: String) -> [String] {
        source.split(separator: "\n").compactMap { line in
            let words = line.split(separator: " ")
            guard let at = words.firstIndex(of: "let"), at > 0, words[at - 1] == "static", at + 3 < words.count,
                words[at + 2] == "=", words[at + 3].hasPrefix("Endpoint<")
            else { return nil }
            return String(words[at + 1])
        }
    }

    @Test func theTableTheRouterAndTheDocumentAgree() async throws {
        let routes = Mutex<[String]>([])
        let (url, cleanup) = try await TestDatabase.make(.sqlite)
        defer { Task { await cleanup() } }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("gatehouse-openapi-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        var config = try TestApp.config(url, directory: directory)
        // /auth/v1 is served with its keys set, and documented beside the native surface.
        config.supabaseAnonKey = "openapi-anon-key-0123456789"
        config.supabaseServiceRoleKey = "openapi-service-role-key-0123456789"
        // So is GET /metrics, with its token.
        config.metricsToken = "openapi-metrics-token-0123456789"
        let frozen = config
        let app = try await buildApplication(
            config: frozen, dependencies: AppDependencies(logger: TestApp.quietLogger, onRoutes: { list in routes.withLock { $0 = list } }))
        try await app.test(.router) { client in
            let served = try await client.execute(uri: "/openapi.yaml", method: .get)
            #expect(served.status == .ok && served.headers[.contentType]?.hasPrefix("application/yaml") == true)
            let yaml = String(buffer: served.body)
            // Hummingbird prints a captured segment as `{name}` (`RouterPath.Element.description`),
            // whether it was registered as `:name` or `{name}`: the OpenAPI spelling the table uses.
            // The admin console's pages are for a browser, not the API: listed on their own, and
            // each of them must be mounted.
            let all = routes.withLock { $0 }
            #expect(Set(ConsoleController.operations).subtracting(all).sorted() == [])
            // `/auth/v1/**` answers any other path there in GoTrue's error shape: not an operation.
            let unknownPaths = GoTrueRoutes.unknown.map(\.operation)
            #expect(Set(unknownPaths).subtracting(all).sorted() == [])
            let registered = all.filter { !ConsoleController.operations.contains($0) && !unknownPaths.contains($0) }
            let table = Endpoints.all.map(\.description) + SupabaseController.operations + MetricsController.operations + OAuthController.operations
            let documented = Self.documentedOperations(yaml)
            #expect(registered.count > 50 && documented.count > 50)
            #expect(Set(registered).count == registered.count, "the router registers a route twice")
            #expect(Set(table).count == table.count, "Endpoints.all lists a route twice")
            let tableSet = ("Endpoints.all", Set(table))
            let routerSet = ("the router", Set(registered))
            let documentSet = ("docs/openapi.yaml", documented)
            #expect(Self.difference(tableSet, routerSet) == "")
            #expect(Self.difference(tableSet, documentSet) == "")
            #expect(Self.difference(routerSet, documentSet) == "")
            // The file in docs/ is the one served.
            let docs = try String(contentsOf: GateRow.root.appendingPathComponent("docs/openapi.yaml"), encoding: .utf8)
            #expect(docs == yaml)
        }
    }

    /// Every endpoint declared in the table is in `Endpoints.all` (the one declared twice, the
    /// purchase answered signed out, is the same route), so a declaration cannot escape the
    /// comparison above.
    @Test func everyDeclaredEndpointIsListed() throws {
        let source = try String(
            contentsOf: GateRow.root.appendingPathComponent("Sources/GatehouseWire/Endpoints.swift"), encoding: .utf8)
        let declared = Self.declaredEndpoints(source)
        #expect(declared.count == Endpoints.all.count + 1, "declared: \(declared.count), listed: \(Endpoints.all.count)")
        let listed = source.components(separatedBy: "public static let all")[1]
        let unlisted = declared.filter { !listed.contains("\($0).erased") && $0 != "applePurchaseRestoreHint" }
        #expect(unlisted == [], "declared in Endpoints but not in Endpoints.all")
        #expect(Endpoints.applePurchaseRestoreHint.erased == Endpoints.applePurchase.erased)
    }

    /// A path parameter stays one segment whatever it holds.
    @Test func pathParametersArePercentEncoded() {
        #expect(Endpoints.spendCredit.path.expand("practice") == "/v1/credits/practice/spend")
        #expect(Endpoints.revokeSession.path.expand("a/b?c#d%e f") == "/v1/auth/sessions/a%2Fb%3Fc%23d%25e%20f")
        #expect(Endpoints.handleAvailability.path.expand("..") == "/v1/handles/%2E%2E")
        #expect(Endpoints.handleAvailability.path.expand("ana.b_c-d~") == "/v1/handles/ana.b_c-d~")
        #expect(Endpoints.handleAvailability.path.expand("zoë") == "/v1/handles/zo%C3%AB")
        #expect(Endpoints.me.path.expand() == "/v1/me")
        #expect(Endpoints.adminSetPlan.path.parameters == ["id"])
        // The same bytes as the SDK's escaping of a handle before the table.
        let handle = "a;b=c@d:e+f$g,h&i!j*k'l(m)n/o?p[q]"
        let before = handle.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed.subtracting(CharacterSet(charactersIn: "/")))
        #expect(Endpoints.handleAvailability.path.expand(handle) == "/v1/handles/" + (before ?? ""))
    }

    /// The document is valid OpenAPI 3.1 (`openapi-spec-validator`, pinned in the test venv).
    @Test func theDocumentIsValidOpenAPI() async throws {
        let python = try #require(SMTPSink.python, "GATEHOUSE_TEST_PYTHON is not set; run make test")
        let (status, text) = try await EmailProcessTests.run(
            python, ["-m", "openapi_spec_validator", GateRow.root.appendingPathComponent("docs/openapi.yaml").path])
        #expect(status == 0, "\(text)")
        #expect(text.contains("OK"))
    }
}
