import Foundation
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
            try Self.run(
                "/usr/bin/env",
                ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=localhost",
                 "-addext", "subjectAltName=DNS:localhost", "-keyout", directory.appendingPathComponent("key.pem").path,
                 "-out", directory.appendingPathComponent("cert.pem").path])
            arguments += ["--tls-cert", directory.appendingPathComponent("cert.pem").path,
                          "--tls-key", directory.appendingPathComponent("key.pem").path]
        }
        if let (user, password) = credentials { arguments += ["--user", user, "--password", password] }
        let started = try Spawned.helper(python: python, arguments)
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
        process.waitUntilExit()
        try? FileManager.default.removeItem(at: directory)
    }

    static func freePort() throws -> Int {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(descriptor) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer -> Int32 in
                guard bind(descriptor, pointer, length) == 0 else { return -1 }
                return getsockname(descriptor, pointer, &length)
            }
        }
        guard bound == 0 else { throw ProcessError("no free port") }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    static func run(_ executable: String, _ arguments: [String]) throws {
        let process = Spawned()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw ProcessError("\(arguments.first ?? executable) failed") }
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
