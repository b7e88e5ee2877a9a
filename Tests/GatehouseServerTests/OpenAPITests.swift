import Foundation
import GatehouseCore
import GatehouseServer
import GatehouseTestSupport
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Synchronization
import Testing

/// `docs/openapi.yaml` describes exactly the routes the server serves.
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

    @Test func theDocumentAndTheRouterAgree() async throws {
        let routes = Mutex<[String]>([])
        let (url, cleanup) = try await TestDatabase.make(.sqlite)
        defer { Task { await cleanup() } }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("gatehouse-openapi-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let config = try TestApp.config(url, directory: directory)
        let app = try await buildApplication(
            config: config, dependencies: AppDependencies(logger: TestApp.quietLogger, onRoutes: { list in routes.withLock { $0 = list } }))
        try await app.test(.router) { client in
            let served = try await client.execute(uri: "/openapi.yaml", method: .get)
            #expect(served.status == .ok && served.headers[.contentType]?.hasPrefix("application/yaml") == true)
            let yaml = String(buffer: served.body)
            let documented = Self.documentedOperations(yaml)
            let registered = Set(routes.withLock { $0 })
            #expect(registered.count > 50 && documented.count > 50)
            #expect(registered.subtracting(documented).sorted() == [], "routes the document lacks")
            #expect(documented.subtracting(registered).sorted() == [], "documented operations no route serves")
            // The file in docs/ is the one served.
            let docs = try String(contentsOf: GateRow.root.appendingPathComponent("docs/openapi.yaml"), encoding: .utf8)
            #expect(docs == yaml)
        }
    }

    /// The document is valid OpenAPI 3.1 (`openapi-spec-validator`, pinned in the test venv).
    @Test func theDocumentIsValidOpenAPI() throws {
        let python = try #require(SMTPSink.python, "GATEHOUSE_TEST_PYTHON is not set; run make test")
        let process = Spawned()
        process.executableURL = URL(fileURLWithPath: python)
        process.arguments = ["-m", "openapi_spec_validator", GateRow.root.appendingPathComponent("docs/openapi.yaml").path]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        try process.run()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationStatus == 0, "\(text)")
        #expect(text.contains("OK"))
    }
}
