import Foundation
#if canImport(Glibc)
    import Glibc
#endif
import GatehouseCore
import GatehouseServer
import GatehouseStore
import GatehouseTestSupport
import GatehouseWire
import Testing

/// The `gatehouse` executable as a newcomer and an operator meet it.
@Suite struct ProcessTests {
    @Test func withNoConfigurationItServesSQLiteAndWritesTheAdminKeyFile() async throws {
        // Only the port is set (to any free one) so that tests can run side by side.
        let server = try ServerProcess(environment: ["GATEHOUSE_PORT": "0"])
        defer { try? FileManager.default.removeItem(at: server.directory) }
        let base = try await server.baseURL()
        let health = try await HTTP.request(base.appendingPathComponent("health"))
        #expect(health.status == 200)
        let head = Migrations.all(for: .sqlite).map(\.version).max() ?? 0
        #expect(health.text == #"{"schema_version":\#(head),"status":"ok"}"#)

        let keyFile = server.directory.appendingPathComponent("gatehouse-admin-key")
        let attributes = try FileManager.default.attributesOfItem(atPath: keyFile.path)
        #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o600)
        #expect(FileManager.default.fileExists(atPath: server.directory.appendingPathComponent("gatehouse.sqlite").path))
        #expect(server.standardOutput.contains("Admin key: in \(keyFile.path)"))
        let key = try String(contentsOf: keyFile, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(!server.standardOutput.contains(key) && !server.standardError.contains(key))

        let users = try await HTTP.request(base.appendingPathComponent("admin/v1/users"), headers: ["Authorization": "Bearer \(key)"])
        #expect(users.status == 200)
        #expect(users.headers["x-request-id"] != nil)
        // Sign up, fail a login and sign in: no password or token may reach the logs.
        let password = "a-password-that-must-never-be-logged"
        let signup = try await HTTP.request(
            base.appendingPathComponent("v1/auth/signup"), method: "POST", headers: ["Content-Type": "application/json"],
            body: Data(#"{"email": "logs@example.com", "password": "\#(password)"}"#.utf8))
        #expect(signup.status == 201)
        let session = try signup.json(AuthResponse.self).session
        _ = try await HTTP.request(
            base.appendingPathComponent("v1/auth/login"), method: "POST", headers: ["Content-Type": "application/json"],
            body: Data(#"{"email": "logs@example.com", "password": "wrong-\#(password)"}"#.utf8))
        let me = try await HTTP.request(base.appendingPathComponent("v1/me"), headers: ["Authorization": "Bearer \(session.accessToken)"])
        #expect(me.status == 200)
        server.signal(SIGTERM)
        #expect(try await server.exitStatus() == 0)
        let logs = server.standardOutput + server.standardError
        for secret in [password, session.accessToken, session.refreshToken, key] {
            #expect(!logs.contains(secret))
        }
        #expect(logs.contains("/v1/auth/signup"))
        // Structured logs: every line on standard error is one JSON object.
        for line in server.standardError.split(separator: "\n") {
            #expect((try? JSONSerialization.jsonObject(with: Data(line.utf8))) != nil, "\(line)")
        }
    }

    @Test(arguments: Backend.available)
    func acknowledgedWritesSurviveKillDashNine(_ backend: Backend) async throws {
        let (url, cleanup) = try await TestDatabase.make(backend)
        defer { Task { await cleanup() } }
        let directory = try ServerProcess.makeDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let environment = [
            "GATEHOUSE_PORT": "0", "GATEHOUSE_DATABASE_URL": url.environmentValue, "GATEHOUSE_ADMIN_KEY": TestApp.adminKey,
        ]
        let first = try ServerProcess(environment: environment, directory: directory)
        let base = try await first.baseURL()

        // Arrange accounts beside the server, then change them through it.
        let config = try TestApp.config(url, directory: directory)
        let users = (0..<5).map { User(id: .random(), email: "k\($0)@x.io", normalizedEmail: "k\($0)@x.io", createdAt: Date()) }
        try await TestApp.withStore(config) { store in
            for user in users { try await store.insertUser(user) }
        }
        let auth = ["Authorization": "Bearer \(TestApp.adminKey)", "Content-Type": "application/json"]
        for user in users.prefix(3) {
            let reply = try await HTTP.request(
                base.appendingPathComponent("admin/v1/users/\(user.id)/disable"), method: "POST", headers: auth,
                body: Data(#"{"reason": "test"}"#.utf8))
            #expect(reply.status == 200)
        }
        let rotated = try await HTTP.request(base.appendingPathComponent("admin/v1/keys/rotate"), method: "POST", headers: auth)
        #expect(rotated.status == 200)
        let keysBefore = try rotated.json(JSONWebKeySet.self).keys.map(\.kid)

        first.signal(SIGKILL)
        _ = try await first.exitStatus()

        let second = try ServerProcess(environment: environment, directory: directory)
        let restarted = try await second.baseURL()
        for (index, user) in users.enumerated() {
            let shown = try await HTTP.request(restarted.appendingPathComponent("admin/v1/users/\(user.id)"), headers: auth)
            #expect(shown.status == 200)
            #expect(try shown.json(AdminUser.self).disabled == (index < 3))
        }
        let jwks = try await HTTP.request(restarted.appendingPathComponent(".well-known/jwks.json")).json(JSONWebKeySet.self)
        #expect(jwks.keys.map(\.kid) == keysBefore)
        second.signal(SIGTERM)
        #expect(try await second.exitStatus() == 0)
        if backend == .sqlite { #expect(try await url.sqliteIntegrity() == "ok") }
    }

    @Test(arguments: [
        ["GATEHOUSE_DATABASE_URL": "mysql://localhost/db"],
        ["GATEHOUSE_PORT": "99999"],
        ["GATEHOUSE_PORT": "http"],
        ["GATEHOUSE_PRESET": "/nonexistent/preset.json"],
        ["GATEHOUSE_DATABASE_URL": "sqlite:///nonexistent-directory/gatehouse.sqlite"],
    ])
    func aBadSettingGivesAOneLineReasonAndANonZeroExit(_ environment: [String: String]) async throws {
        let server = try ServerProcess(environment: environment)
        defer { try? FileManager.default.removeItem(at: server.directory) }
        let status = try await server.exitStatus()
        #expect(status != 0)
        let lines = server.standardError.split(separator: "\n")
        #expect(lines.count == 1, "\(server.standardError)")
        #expect(lines.first?.hasPrefix("gatehouse: ") == true)
        #expect(!server.standardError.contains("Fatal error") && !server.standardError.contains("Stack dump"))
    }

    @Test func anUnreachablePostgresGivesAOneLineReason() async throws {
        // Port 9 (discard) on loopback: nothing listens there.
        let server = try ServerProcess(environment: ["GATEHOUSE_DATABASE_URL": "postgres://gatehouse@127.0.0.1:9/gatehouse?sslmode=disable"])
        defer { try? FileManager.default.removeItem(at: server.directory) }
        #expect(try await server.exitStatus() == 1)
        let lines = server.standardError.split(separator: "\n").filter { !$0.hasPrefix("{") }
        #expect(lines == ["gatehouse: cannot reach the database: no answer within 2.0 seconds"], "\(server.standardError)")
    }

    @Test func theCLIManagesKeysAndUsers() async throws {
        let directory = try ServerProcess.makeDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        func run(_ arguments: [String]) async throws -> (Int32, String) {
            let process = try ServerProcess(arguments, environment: [:], directory: directory)
            let status = try await process.exitStatus()
            return (status, process.standardOutput + process.standardError)
        }
        let (migrated, migrateOutput) = try await run(["migrate"])
        #expect(migrated == 0 && migrateOutput.contains("Applied migrations: 1"))
        let (_, again) = try await run(["migrate"])
        #expect(again.contains("up to date"))

        let (rotated, rotateOutput) = try await run(["keys", "rotate"])
        #expect(rotated == 0 && rotateOutput.contains("now signs new tokens"), "\(rotateOutput)")
        let (listed, listOutput) = try await run(["keys", "list"])
        #expect(listed == 0)
        #expect(listOutput.contains("active") && listOutput.contains("retired"))

        let config = try TestApp.config(.sqlite(path: directory.appendingPathComponent("gatehouse.sqlite").path), directory: directory)
        let user = User(id: .random(), email: "Cli@Example.com", normalizedEmail: "cli@example.com", createdAt: Date())
        try await TestApp.withStore(config) { try await $0.insertUser(user) }
        let (_, usersOutput) = try await run(["users", "list"])
        #expect(usersOutput.contains(user.id.description) && usersOutput.contains("Cli@Example.com"))
        let (disabled, disableOutput) = try await run(["users", "disable", "cli@example.com", "--reason", "spam"])
        #expect(disabled == 0 && disableOutput.contains("disabled"))
        let (_, shown) = try await run(["users", "show", user.id.description])
        #expect(shown.contains(#""disabled_reason" : "spam""#))
        let (enabled, enableOutput) = try await run(["users", "enable", user.id.description])
        #expect(enabled == 0 && enableOutput.contains("active"))
        let (unconfirmed, unconfirmedOutput) = try await run(["users", "delete", user.id.description])
        #expect(unconfirmed == 0 && unconfirmedOutput.contains("Nothing deleted"))
        let (deleted, deleteOutput) = try await run(["users", "delete", user.id.description, "--yes"])
        #expect(deleted == 0 && deleteOutput.contains("deleted"), "\(deleteOutput)")
        let gone = try await TestApp.withStore(config) { try await $0.user(id: user.id) }
        #expect(gone == nil)
        let feed = try await TestApp.withStore(config) { try await $0.events(after: nil, userID: user.id, limit: 10) }
        #expect(feed.map(\.type) == [.userDeleted])
        let (missing, missingOutput) = try await run(["users", "show", "nobody@example.com"])
        #expect(missing == 1 && missingOutput.hasPrefix("gatehouse: No user matches"))
        let (_, help) = try await run(["--help"])
        for command in ["serve", "migrate", "keys", "users"] { #expect(help.contains(command)) }
    }
}

@Suite struct GracefulShutdownTests {
    /// A request in flight when SIGTERM arrives still gets its answer; then the process exits 0.
    @Test func sigtermLetsAnInFlightRequestFinish() async throws {
        let server = try ServerProcess(environment: ["GATEHOUSE_PORT": "0", "GATEHOUSE_ADMIN_KEY": TestApp.adminKey])
        defer { try? FileManager.default.removeItem(at: server.directory) }
        let port = try #require(try await server.baseURL().port)
        let body = #"{"reason": "shutdown test"}"#
        let head = "POST /admin/v1/users/\(UUID())/disable HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            + "Authorization: Bearer \(TestApp.adminKey)\r\nContent-Type: application/json\r\n"
            + "Content-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n"
        let socket = try RawSocket(port: port)
        // Headers and half the body, then SIGTERM, then the rest of the body.
        // The pauses only order the steps (the server must have the request before the signal);
        // nothing is asserted about time.
        try socket.send(head + body.prefix(10))
        try await Task.sleep(for: .seconds(1))
        server.signal(SIGTERM)
        try await Task.sleep(for: .seconds(1))
        try socket.send(String(body.dropFirst(10)))
        let response = try socket.receiveAll()
        #expect(response.hasPrefix("HTTP/1.1 404"), "\(response)")
        #expect(response.contains(#""code":"not_found""#))
        #expect(try await server.exitStatus() == 0)
    }

    /// A request whose body never ends holds the shutdown only for its grace (`ShutdownWatch`,
    /// 10 s), not for the body's or the idle connection's time-out (here 600 s), and the log says
    /// what the shutdown waited on: the HTTP server, since every service beside it still ran.
    @Test func aRequestThatNeverEndsHoldsTheShutdownOnlyForItsGrace() async throws {
        let server = try ServerProcess(environment: [
            "GATEHOUSE_PORT": "0", "GATEHOUSE_ADMIN_KEY": TestApp.adminKey, "GATEHOUSE_HTTP_BODY_TIMEOUT_SECONDS": "600",
            "GATEHOUSE_HTTP_IDLE_TIMEOUT_SECONDS": "600",
        ])
        defer { try? FileManager.default.removeItem(at: server.directory) }
        let port = try #require(try await server.baseURL().port)
        let head = "POST /admin/v1/users/\(UUID())/disable HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            + "Authorization: Bearer \(TestApp.adminKey)\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n"
        let socket = try RawSocket(port: port)
        defer { close(socket.descriptor) }
        try socket.send(head + #"{"reason": "#)
        try await Task.sleep(for: .seconds(1))
        server.signal(SIGTERM)
        // `exitStatus` waits about a minute: without the grace the process would run until the
        // body's time-out.
        let status = try await server.exitStatus()
        #expect(server.standardError.contains("shutdown is still waiting"), "\(server.standardError)")
        #expect(server.standardError.contains("the HTTP server (its requests in flight)"), "\(server.standardError)")
        #expect(status == 0, "\(server.standardError)")
    }
}

/// A blocking TCP client, to hold a request open at the byte level.
struct RawSocket {
    let descriptor: Int32

    init(port: Int) throws {
        descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw ProcessError("socket() failed") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else { throw ProcessError("connect() failed") }
        var timeout = timeval(tv_sec: 30, tv_usec: 0)
        setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }

    func send(_ text: String) throws {
        let bytes = Array(text.utf8)
        guard Glibc.send(descriptor, bytes, bytes.count, Int32(MSG_NOSIGNAL)) == bytes.count else { throw ProcessError("send() failed") }
    }

    /// Reads until the server closes the connection.
    func receiveAll() throws -> String {
        defer { close(descriptor) }
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4_096)
        while true {
            let count = recv(descriptor, &buffer, buffer.count, 0)
            if count <= 0 { break }
            received += buffer[0..<count]
        }
        return String(decoding: received, as: UTF8.self)
    }
}
