import Foundation
import GatehouseCore
import GatehouseWire
import GatehouseStore
import NIOCore
import NIOExtras
import NIOPosix
import NIOSSL
import Tracing

/// Hands a mail to something that delivers it.
public protocol MailTransport: Sendable {
    /// Whether the outbox keeps a delivered mail's bodies (the dev outbox shows them).
    var keepsBodies: Bool { get }
    /// Whether the outbox keeps this message's bodies once sent (`keepsBodies` unless the
    /// transport routes kinds apart, as `OutboxDelivery` does).
    func keepsBodies(of message: OutboxMessage) -> Bool
    func deliver(_ message: OutboxMessage) async throws
}

extension MailTransport {
    func keepsBodies(of message: OutboxMessage) -> Bool { keepsBodies }
}

/// The parts of `smtp://user:pass@host:port` (STARTTLS when the server offers it) or
/// `smtps://…` (TLS from the first byte).
public struct SMTPSettings: Sendable {
    public var host: String
    public var port: Int
    public var username: String?
    public var password: String?
    public var implicitTLS: Bool
    /// Extra PEM certificates to trust (a private CA, or a test server's own certificate).
    public var trustedCertificates: String?

    public init?(url: String, trustedCertificates: String? = nil) {
        guard let components = URLComponents(string: url), let scheme = components.scheme, let host = components.host, !host.isEmpty
        else { return nil }
        switch scheme {
        case "smtp": implicitTLS = false
        case "smtps": implicitTLS = true
        default: return nil
        }
        self.host = host
        port = components.port ?? (implicitTLS ? 465 : 587)
        username = components.user?.removingPercentEncoding
        password = components.password?.removingPercentEncoding
        self.trustedCertificates = trustedCertificates
    }
}

/// An SMTP client over SwiftNIO: EHLO, STARTTLS when offered (TLS is then required to go on),
/// AUTH PLAIN or LOGIN when credentials are given, one message per connection.
struct SMTPTransport: MailTransport {
    let settings: SMTPSettings
    let composer: MailComposer
    let clock: any WallClock
    /// Each delivery is an `smtp.send` span (nil: traces are off).
    var tracer: (any Tracer)? = nil
    var keepsBodies: Bool { false }

    func deliver(_ message: OutboxMessage) async throws {
        // The server and the mail's kind; never the address or the contents.
        let attributes: SpanAttributes = [
            "server.address": .string(settings.host), "server.port": .int64(Int64(settings.port)), "gatehouse.mail.kind": .string(message.kind),
        ]
        try await traced(tracer, "smtp.send", kind: .client, attributes: attributes) { try await send(message) }
    }

    private func send(_ message: OutboxMessage) async throws {
        let tls = try makeTLSContext()
        let host = settings.host
        let implicit = settings.implicitTLS
        let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .connectTimeout(.seconds(10))
            .connect(host: settings.host, port: settings.port) { channel in
                channel.eventLoop.makeCompletedFuture {
                    if implicit {
                        try channel.pipeline.syncOperations.addHandler(NIOSSLClientHandler(context: tls, serverHostname: Self.sniName(host)))
                    }
                    try channel.pipeline.syncOperations.addHandler(ByteToMessageHandler(LineBasedFrameDecoder()))
                    return try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: channel)
                }
            }
        try await Deadlines.shared.within(.seconds(30), orThrow: { SMTPError("no answer within 30 seconds") }) {
            try await channel.executeThenClose { inbound, outbound in
                var conversation = SMTPConversation(lines: inbound.makeAsyncIterator(), outbound: outbound)
                try await conversation.expect(220)
                var capabilities = try await conversation.ehlo(Self.heloName)
                if !implicit {
                    guard capabilities.contains(where: { $0.uppercased().hasPrefix("STARTTLS") }) || Self.isLoopback(host) else {
                        throw SMTPError("the server does not offer STARTTLS; refusing to send mail in clear text")
                    }
                    if capabilities.contains(where: { $0.uppercased().hasPrefix("STARTTLS") }) {
                        try await conversation.command("STARTTLS", expect: 220)
                        // TLS goes in front of the line decoder, on the channel's own event loop.
                        let inner = channel.channel
                        try await inner.eventLoop.submit {
                            let handler = try NIOSSLClientHandler(context: tls, serverHostname: Self.sniName(host))
                            try inner.pipeline.syncOperations.addHandler(handler, position: .first)
                        }.get()
                        capabilities = try await conversation.ehlo(Self.heloName)
                    }
                }
                if let username = settings.username, let password = settings.password {
                    try await conversation.authenticate(username: username, password: password, capabilities: capabilities)
                }
                try await conversation.command("MAIL FROM:<\(composer.envelopeFrom)>", expect: 250)
                try await conversation.command("RCPT TO:<\(message.recipient)>", expect: 250, 251)
                try await conversation.command("DATA", expect: 354)
                let body = MailComposer.dotStuffed(composer.compose(message, date: clock.now))
                try await conversation.send(body + ".\r\n")
                try await conversation.expect(250)
                try? await conversation.send("QUIT\r\n")
            }
        }
    }

    private func makeTLSContext() throws -> NIOSSLContext {
        var configuration = TLSConfiguration.makeClientConfiguration()
        configuration.minimumTLSVersion = .tlsv12
        if let pem = settings.trustedCertificates {
            let certificates = try NIOSSLCertificate.fromPEMBytes(Array(pem.utf8))
            configuration.trustRoots = .default
            configuration.additionalTrustRoots = [.certificates(certificates)]
        }
        return try NIOSSLContext(configuration: configuration)
    }

    /// SNI takes host names, not addresses.
    static func sniName(_ host: String) -> String? {
        IPAddress(host) == nil ? host : nil
    }

    static func isLoopback(_ host: String) -> Bool {
        host == "localhost" || host.hasPrefix("127.") || host == "::1"
    }

    static let heloName = "gatehouse.localhost"
}

/// One SMTP dialogue: commands out, multi-line replies in.
struct SMTPConversation {
    var lines: NIOAsyncChannelInboundStream<ByteBuffer>.AsyncIterator
    let outbound: NIOAsyncChannelOutboundWriter<ByteBuffer>

    mutating func reply() async throws -> (code: Int, lines: [String]) {
        var texts: [String] = []
        while true {
            guard let buffer = try await lines.next(isolation: #isolation) else { throw SMTPError("the server closed the connection") }
            var line = String(buffer: buffer)
            if line.hasSuffix("\r") { line.removeLast() }
            guard line.count >= 3, let code = Int(line.prefix(3)) else { throw SMTPError("unreadable reply: \(line.prefix(80))") }
            texts.append(String(line.dropFirst(4)))
            if line.count == 3 || line[line.index(line.startIndex, offsetBy: 3)] == " " {
                return (code, texts)
            }
        }
    }

    mutating func expect(_ codes: Int...) async throws {
        let (code, texts) = try await reply()
        guard codes.contains(code) else { throw SMTPError("server said \(code) \(texts.last ?? "")") }
    }

    func send(_ text: String) async throws {
        try await outbound.write(ByteBuffer(string: text))
    }

    mutating func command(_ text: String, expect codes: Int...) async throws {
        try await send(text + "\r\n")
        let (code, texts) = try await reply()
        guard codes.contains(code) else {
            // Never echo an AUTH line: it carries the credentials.
            let shown = text.hasPrefix("AUTH") ? "AUTH" : String(text.prefix(40))
            throw SMTPError("\(shown) refused: \(code) \(texts.last ?? "")")
        }
    }

    /// EHLO, returning the capability lines.
    mutating func ehlo(_ name: String) async throws -> [String] {
        try await send("EHLO \(name)\r\n")
        let (code, texts) = try await reply()
        guard code == 250 else { throw SMTPError("EHLO refused: \(code)") }
        return Array(texts.dropFirst())
    }

    mutating func authenticate(username: String, password: String, capabilities: [String]) async throws {
        let mechanisms = capabilities.first { $0.uppercased().hasPrefix("AUTH") }?.uppercased().split(separator: " ") ?? []
        if mechanisms.contains("PLAIN") || mechanisms.isEmpty {
            let token = Data(("\u{0}" + username + "\u{0}" + password).utf8).base64EncodedString()
            try await command("AUTH PLAIN \(token)", expect: 235)
        } else if mechanisms.contains("LOGIN") {
            try await command("AUTH LOGIN", expect: 334)
            try await command(Data(username.utf8).base64EncodedString(), expect: 334)
            try await command(Data(password.utf8).base64EncodedString(), expect: 235)
        } else {
            throw SMTPError("the server offers no AUTH mechanism Gatehouse speaks (PLAIN, LOGIN)")
        }
    }
}

struct SMTPError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
