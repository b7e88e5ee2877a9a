import Crypto
import Foundation
import GatehouseCore
import Testing

/// The TOTP codes, key URIs and QR images Gatehouse makes, read by other people's tools: pyotp
/// (PyPI) and oathtool (Debian) compute the same codes from the secret, pyotp parses the URI,
/// and zbar (Debian) reads the QR image, rendered by librsvg, back to the same text.
@Suite(.requires(OneTimeCodeTools.available, "pyotp in GATEHOUSE_TEST_PYTHON, oathtool, zbarimg and rsvg-convert"))
struct OneTimeCodeToolTests {
    static func tool(_ name: String) -> String? { OneTimeCodeTools.tool(name) }

    static func totp(_ secret: [UInt8]) -> TOTP {
        TOTP(secret: secret) { key, message in Array(HMAC<Insecure.SHA1>.authenticationCode(for: message, using: SymmetricKey(data: key))) }
    }

    static func python(_ program: String, _ arguments: [String] = []) async throws -> String {
        let python = try #require(SMTPSink.python)
        return try await Command.run(python, ["-c", program] + arguments).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// A random secret; codes at times across the years, by Gatehouse, pyotp and oathtool.
    @Test func pyotpAndOathtoolComputeTheSameCodes() async throws {
        var generator = SystemRandomNumberGenerator()
        let secret = (0..<TOTP.secretLength).map { _ in UInt8.random(in: 0...255, using: &generator) }
        let encoded = Base32.encode(secret)
        let times: [Int64] = [0, 59, 1_111_111_109, 1_700_000_000, 1_795_000_123, 2_000_000_000, 4_102_444_799]
        let ours = times.map { Self.totp(secret).code(at: Date(timeIntervalSince1970: TimeInterval($0))) }
        let pyotp = try await Self.python(
            "import sys, pyotp; t = pyotp.TOTP(sys.argv[1]); print(' '.join(t.at(int(s)) for s in sys.argv[2:]))",
            [encoded] + times.map(String.init))
        #expect(pyotp.split(separator: " ").map(String.init) == ours)
        for (time, code) in zip(times, ours) {
            let oathtool = try await Command.run(try #require(Self.tool("oathtool")), ["--totp", "-b", "--now", "@\(time)", encoded])
            #expect(oathtool.trimmingCharacters(in: .whitespacesAndNewlines) == code, "at \(time)")
        }
    }

    /// pyotp reads the key URI back: the secret, the issuer and the account, spaces and `@`
    /// included.
    @Test func pyotpParsesTheKeyURI() async throws {
        let secret = Array("a secret of 20 bytes".utf8)
        let uri = TOTP.uri(secret: secret, issuer: "Hannah Health", account: "pia+1@example.com")
        let parsed = try await Self.python(
            "import sys, pyotp; t = pyotp.parse_uri(sys.argv[1]); print(t.secret); print(t.issuer); print(t.name); print(t.digits, t.interval)",
            [uri])
        #expect(parsed.split(separator: "\n").map(String.init) == [Base32.encode(secret), "Hannah Health", "pia+1@example.com", "6 30"])
    }

    /// Texts from version 1 to 20 (byte counts across the 8- and 16-bit count, with and without
    /// version blocks): each SVG, rendered to PNG by rsvg-convert, reads back the same in zbarimg.
    @Test(arguments: [5, 40, 90, 130, 200, 330, 500, 666])
    func zbarReadsTheQRImageBack(_ count: Int) async throws {
        let uri = TOTP.uri(secret: Array("0123456789abcdefghij".utf8), issuer: "Gatehouse", account: "reader@example.com")
        var text = count <= uri.utf8.count ? String(uri.prefix(count)) : uri + "&x="
        while text.utf8.count < count { text += String(text.utf8.count % 10) }
        let code = try QRCode(encoding: text)
        #expect(try await OneTimeCodeTools.readQR(svg: code.svg()) == text, "version \(code.version), mask \(code.mask)")
    }
}

enum OneTimeCodeTools {
    /// What zbarimg reads from `svg` rendered to PNG by rsvg-convert.
    static func readQR(svg: String) async throws -> String {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("gatehouse-qr-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let svgFile = directory.appendingPathComponent("code.svg")
        let png = directory.appendingPathComponent("code.png")
        try svg.write(to: svgFile, atomically: true, encoding: .utf8)
        try await Command.run(try #require(tool("rsvg-convert")), ["-o", png.path, svgFile.path])
        let read = try await Command.run(try #require(tool("zbarimg")), ["--nodbus", "--quiet", "--raw", png.path])
        return read.trimmingCharacters(in: .newlines)
    }

    static var available: Bool {
        SMTPSink.python != nil && ["oathtool", "zbarimg", "rsvg-convert"].allSatisfy { tool($0) != nil }
    }

    /// The program's path on `PATH` (Debian's /usr/bin, Homebrew's prefix).
    static func tool(_ name: String) -> String? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin"
        return path.split(separator: ":").map { "\($0)/\(name)" }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }
}
