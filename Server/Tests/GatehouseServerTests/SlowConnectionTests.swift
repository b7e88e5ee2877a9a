import Foundation
import GatehouseTestSupport
import Testing

/// Slow clients (issue 9, item 3): hundreds of connections trickling their headers in
/// (slowloris) or their bodies (R-U-Dead-Yet), made by `slowhttptest`, while an ordinary client
/// keeps being served promptly; and a connection that never finishes its request head is closed
/// after the idle timeout.
@Suite struct SlowConnectionTests {
    static let slowhttptest: String? = ["/usr/bin/slowhttptest", "/usr/local/bin/slowhttptest", "/opt/homebrew/bin/slowhttptest"]
        .first { FileManager.default.isExecutableFile(atPath: $0) }

    static let idleTimeout = 4

    @Test(.requires(slowhttptest != nil, "slowhttptest"))
    func slowClientsDoNotStarveOthers() async throws {
        let (url, cleanup) = try await TestDatabase.make(.sqlite)
        defer { Task { await cleanup() } }
        let server = try ServerProcess(environment: ServerProcess.environment(database: url.environmentValue, [
            "GATEHOUSE_IP_LIMITS": "off", "GATEHOUSE_HTTP_IDLE_TIMEOUT_SECONDS": "\(Self.idleTimeout)",
        ]))
        let base = try await server.baseURL()
        let json = ["Content-Type": "application/json"]
        let signup = try await HTTP.request(
            base.appendingPathComponent("v1/auth/signup"), method: "POST", headers: json,
            body: Data(#"{"email": "patient@example.com", "password": "correct horse battery"}"#.utf8))
        #expect(signup.status == 201)

        // Slow headers, then slow bodies: 400 connections each, opened at 200 a second, sending a
        // little more every 2 seconds for 10 seconds.
        let target = base.absoluteString
        let attacks: [(String, [String])] = [
            ("slow headers", ["-H", "-u", "\(target)/health"]),
            ("slow body", ["-B", "-t", "POST", "-f", "application/json", "-s", "8192", "-u", "\(target)/v1/auth/login"]),
        ]
        // The measurement takes its turn with the suite's request bursts (`BurstGate`): two
        // cores shared with a 100-request burst say nothing about slow clients.
        try await BurstGate.exclusive {
            for (name, mode) in attacks {
                let clock = ContinuousClock()
                let start = clock.now
                let attack = Task {
                    try await Command.run(try #require(Self.slowhttptest), mode + ["-c", "400", "-r", "200", "-i", "2", "-x", "8", "-l", "10", "-p", "3"])
                    return clock.now
                }
                // Meanwhile an ordinary client: a health check and a login, five rounds. Served,
                // they all end while the attack still holds its connections (it lasts 10 s); a
                // starved server would answer them only once the attack lets go. No time bound.
                // Two cores cannot carry this and the parallel suite at once (the rounds and
                // other tests' requests then wait on the CPU, not on the slow clients), so
                // scripts/test runs this suite on its own after the parallel run.
                try await Task.sleep(for: .seconds(2))  // The attack's connections are open by now.
                var lastRoundEnded = clock.now
                for _ in 0..<5 {
                    let health = try await HTTP.request(base.appendingPathComponent("health"))
                    let login = try await HTTP.request(
                        base.appendingPathComponent("v1/auth/login"), method: "POST", headers: json,
                        body: Data(#"{"email": "patient@example.com", "password": "correct horse battery"}"#.utf8))
                    #expect(health.status == 200 && login.status == 200, "\(name): \(health.status) / \(login.status)")
                    lastRoundEnded = clock.now
                    try await Task.sleep(for: .milliseconds(200))
                }
                let attackEnded = try await attack.value
                #expect(
                    lastRoundEnded < attackEnded,
                    "\(name): the ordinary client's rounds ended \(lastRoundEnded - start) in, the attack \(attackEnded - start) in")
            }
        }

        // A request head that never ends is cut off after the idle timeout, however often the
        // client sends another header line.
        let closedAfter = try await Self.trickleHeaders(to: base, every: .seconds(1), giveUpAfter: .seconds(15))
        #expect(closedAfter != nil, "the server kept a never-ending request head open")
        if let closedAfter {
            #expect(closedAfter >= .seconds(Self.idleTimeout - 1) && closedAfter < .seconds(Self.idleTimeout + 4), "closed after \(closedAfter)")
        }
        server.signal(SIGTERM)
        #expect(try await server.exitStatus() == 0)
    }

    /// Opens a connection, sends a request line and then one header line per `every`, never the
    /// blank line; returns how long the server took to close it, or nil if it had not by `giveUpAfter`.
    static func trickleHeaders(to base: URL, every: Duration, giveUpAfter: Duration) async throws -> Duration? {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw ProcessError("no socket") }
        defer { close(descriptor) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = in_port_t(UInt16(base.port!).bigEndian)
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else { throw ProcessError("cannot connect") }
        let clock = ContinuousClock()
        let started = clock.now
        #if os(Linux)
            let flags = Int32(MSG_NOSIGNAL)  // A closed connection must not raise SIGPIPE in the test process.
        #else
            var on: Int32 = 1
            setsockopt(descriptor, SOL_SOCKET, SO_NOSIGPIPE, &on, socklen_t(MemoryLayout<Int32>.size))
            let flags: Int32 = 0
        #endif
        func sendLine(_ text: String) -> Bool {
            text.utf8CString.withUnsafeBufferPointer { send(descriptor, $0.baseAddress, $0.count - 1, flags) } > 0
        }
        guard sendLine("GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n") else { return .zero }
        var line = 0
        var nextLine = clock.now + every
        var buffer = [UInt8](repeating: 0, count: 256)
        while clock.now - started < giveUpAfter {
            // A read of 0 bytes: the server closed the connection (never blocks the test's thread).
            let count = recv(descriptor, &buffer, buffer.count, Int32(MSG_DONTWAIT))
            if count == 0 { return clock.now - started }
            if clock.now >= nextLine {
                line += 1
                if !sendLine("X-Slow-\(line): still-coming\r\n") { return clock.now - started }
                nextLine = clock.now + every
            }
            try await Task.sleep(for: .milliseconds(50))
        }
        return nil
    }
}
