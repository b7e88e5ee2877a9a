import Foundation
import Synchronization
import Testing

/// A real SMTP server (Python aiosmtpd, `Tests/support/smtp_sink.py`) on a loopback port,
/// storing what it accepts in a maildir.
final class SMTPSink: Sendable {
    let process: Spawned
    let input: Pipe
    let port: Int
    let maildir: URL
    let directory: URL

    static var python: String? { ProcessInfo.processInfo.environment["GATEHOUSE_TEST_PYTHON"] }

    static var script: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("support/smtp_sink.py")
    }

    /// `tls` makes it require STARTTLS with a self-signed certificate for `localhost`
    /// (`certificate` is its PEM); `credentials` makes it require AUTH.
    init(port: Int? = nil, tls: Bool = false, credentials: (String, String)? = nil) async throws {
        guard let python = Self.python else { throw ProcessError("GATEHOUSE_TEST_PYTHON (with aiosmtpd) is not set; run make test") }
        directory = try ServerProcess.makeDirectory()
        maildir = directory.appendingPathComponent("mail")
        self.port = try port ?? Self.freePort()
        var arguments = [Self.script.path, "--port", String(self.port), "--maildir", maildir.path]
        if tls {
            try await Command.run(
                "/usr/bin/env",
                ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=localhost",
                 "-addext", "subjectAltName=DNS:localhost", "-keyout", directory.appendingPathComponent("key.pem").path,
                 "-out", directory.appendingPathComponent("cert.pem").path])
            arguments += ["--tls-cert", directory.appendingPathComponent("cert.pem").path,
                          "--tls-key", directory.appendingPathComponent("key.pem").path]
        }
        if let (user, password) = credentials { arguments += ["--user", user, "--password", password] }
        let started = try await Spawned.helper(python: python, arguments)
        (process, input) = (started.process, started.input)
        guard started.firstLine.contains("READY") else { throw ProcessError("the SMTP sink did not start") }
    }

    var certificatePath: String { directory.appendingPathComponent("cert.pem").path }

    /// The raw messages received so far.
    var messages: [String] {
        let folder = maildir.appendingPathComponent("new")
        let files = (try? FileManager.default.contentsOfDirectory(at: folder, includingPropertiesForKeys: nil)) ?? []
        return files.compactMap { try? String(contentsOf: $0, encoding: .utf8) }
    }

    /// Polls (about 90 seconds at most: a crashed node's lease on a mail runs 40) until
    /// `count` messages have arrived.
    func waitForMessages(_ count: Int = 1) async throws -> [String] {
        for _ in 0..<900 {
            let received = messages
            if received.count >= count { return received }
            try await Task.sleep(for: .milliseconds(100))
        }
        throw ProcessError("no mail arrived")
    }

    func stop() {
        try? input.fileHandleForWriting.close()
        // Blocks its thread: the helper exits as soon as its input closes.
        process.waitUntilExit()
        try? FileManager.default.removeItem(at: directory)
    }

    /// A loopback port no socket holds now, for a program that is told its port before it binds
    /// it. It comes from below the kernel's ephemeral range (`ip_local_port_range`), never from
    /// it: binding port 0 hands out an ephemeral port, and with a hundred tests connecting at
    /// once any outgoing connection may be given that port before the program binds it ("Address
    /// already in use"; a test's own PostgreSQL cluster did not start so in the CI of stop 83).
    /// No port is handed out twice in one test process.
    static func freePort() throws -> Int {
        let range = 10_000..<max(ephemeralStart, 10_001)
        for _ in 0..<1_000 {
            let port = Int.random(in: range)
            guard bindable(port), handedOut.withLock({ $0.insert(port).inserted }) else { continue }
            return port
        }
        throw ProcessError("no free port below \(range.upperBound)")
    }

    private static let handedOut = Mutex<Set<Int>>([])

    /// The first port of the kernel's ephemeral range (Linux's default when it cannot be read).
    private static let ephemeralStart: Int = {
        let text = (try? String(contentsOfFile: "/proc/sys/net/ipv4/ip_local_port_range", encoding: .utf8)) ?? ""
        return text.split(whereSeparator: \.isWhitespace).first.flatMap { Int($0) } ?? 32_768
    }()

    /// Whether a socket can bind 127.0.0.1:`port` now (without `SO_REUSEADDR`, so a port still
    /// in `TIME_WAIT` counts as taken).
    private static func bindable(_ port: Int) -> Bool {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { return false }
        defer { close(descriptor) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = UInt16(port).bigEndian
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
        }
    }
}

/// The decoded parts of a received MIME message.
struct ReceivedMail {
    var headers: [String: String] = [:]
    var parts: [String: String] = [:]

    init(_ raw: String) {
        let normalized = raw.replacingOccurrences(of: "\r\n", with: "\n")
        let sections = normalized.components(separatedBy: "\n\n")
        for line in sections.first?.split(separator: "\n") ?? [] {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[String(line[..<colon]).lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        // Each part: its headers, a blank line, base64 lines.
        for chunk in normalized.components(separatedBy: "\n--gatehouse-").dropFirst() {
            let pieces = chunk.components(separatedBy: "\n\n")
            guard pieces.count >= 2, let type = pieces[0].range(of: "Content-Type: ") else { continue }
            let contentType = pieces[0][type.upperBound...].split(separator: ";").first.map(String.init) ?? ""
            let base64 = pieces[1].split(separator: "\n").filter { !$0.hasPrefix("--") }.joined()
            parts[contentType] = Data(base64Encoded: base64).map { String(decoding: $0, as: UTF8.self) }
        }
    }
}
