import Foundation
import GatehouseCore
@testable import GatehouseServer
import GatehouseStore
import GatehouseTestSupport
import GatehouseWire
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Testing

@Suite struct MailComposerTests {
    @Test func composesAValidMultipartMessage() {
        let composer = MailComposer(from: "Handz <no-reply@handz.app>", domain: "auth.handz.app")
        let message = OutboxMessage(
            createdAt: Date(unixSeconds: 1_800_000_000), kind: "test", recipient: "ann@example.com", subject: "Vérifiez ✉️",
            textBody: ".starts with a dot\n" + String(repeating: "long line ", count: 50), htmlBody: "<p>Hi</p>")
        let text = composer.compose(message, date: Date(unixSeconds: 1_800_000_000))
        #expect(text.contains("Subject: =?UTF-8?B?"))
        #expect(text.contains("From: \"Handz\" <no-reply@handz.app>"))
        #expect(text.contains("Date: Fri, 15 Jan 2027 08:00:00 +0000"))
        #expect(text.contains("Message-ID: <\(message.id.uuidString.lowercased())@auth.handz.app>"))
        #expect(text.split(separator: "\r\n", omittingEmptySubsequences: false).allSatisfy { $0.utf8.count <= 78 })
        #expect(MailComposer.dotStuffed("a\r\n.b\r\n..c") == "a\r\n..b\r\n...c")
        #expect(composer.envelopeFrom == "no-reply@handz.app")
    }
}

@Suite(.serialized) struct MailDeliveryTests {
    func queueTestMail(_ client: any TestClientProtocol, to: String = "ann@example.com") async throws -> String {
        let response = try await client.execute(
            uri: "/admin/v1/mail/test", method: .post, headers: TestApp.adminHeaders, body: jsonBody(#"{"to": "\#(to)"}"#))
        #expect(response.status == .accepted)
        return try response.json(MailQueued.self).id
    }

    /// Polls the outbox (about ten seconds at most) until its newest mail satisfies `done`.
    func newestMail(_ config: GatehouseConfig, until done: (OutboxMessage) -> Bool) async throws -> OutboxMessage? {
        var stored: OutboxMessage?
        for _ in 0..<200 {
            stored = try await TestApp.withStore(config) { try await $0.recentMail(limit: 1).first }
            if let stored, done(stored) { break }
            try await Task.sleep(for: .milliseconds(50))
        }
        return stored
    }

    @Test(.requires(SMTPSink.python != nil, "GATEHOUSE_TEST_PYTHON"))
    func deliversOverSTARTTLSWithAuthAndClearsTheBodies() async throws {
        let sink = try await SMTPSink(tls: true, credentials: ("mailer", "s3cret pass"))
        defer { sink.stop() }
        try await TestApp.run(.sqlite, adjust: {
            $0.smtpURL = "smtp://mailer:s3cret%20pass@localhost:\(sink.port)"
            $0.smtpCAFile = sink.certificatePath
        }) { client, config in
            let id = try await queueTestMail(client)
            let received = try await sink.waitForMessages()
            let mail = ReceivedMail(received[0])
            #expect(mail.headers["to"] == "ann@example.com")
            #expect(mail.headers["from"] == "\"Gatehouse\" <no-reply@127.0.0.1>")
            #expect(mail.headers["message-id"]?.hasPrefix("<\(id)@") == true)
            #expect(mail.headers["date"] != nil && mail.headers["mime-version"] == "1.0")
            #expect(mail.parts["text/plain"]?.contains("mail delivery works") == true)
            #expect(mail.parts["text/html"]?.contains("<strong>Gatehouse</strong>") == true)
            // Once the SMTP server has it, the outbox keeps no body.
            let stored = try await newestMail(config) { $0.status == "sent" }
            #expect(stored?.status == "sent" && stored?.textBody == nil && stored?.htmlBody == nil)
        }
    }

    @Test(.requires(SMTPSink.python != nil, "GATEHOUSE_TEST_PYTHON"))
    func anUntrustedCertificateStopsDeliveryAndTheMailWaits() async throws {
        let sink = try await SMTPSink(tls: true, credentials: ("mailer", "s3cret"))
        defer { sink.stop() }
        // The server's self-signed certificate is not trusted: no credentials, no mail in clear text.
        try await TestApp.run(.sqlite, adjust: { $0.smtpURL = "smtp://mailer:s3cret@localhost:\(sink.port)" }) { client, config in
            _ = try await queueTestMail(client)
            let stored = try await newestMail(config) { $0.attempts > 0 }
            #expect(stored?.status == "pending" && stored?.attempts == 1)
            #expect(stored?.lastError != nil && stored?.lastError?.contains("s3cret") == false)
            #expect(stored?.textBody != nil)
            #expect(sink.messages.isEmpty)
        }
    }

    @Test(.requires(SMTPSink.python != nil, "GATEHOUSE_TEST_PYTHON"))
    func aFailedDeliveryIsRetriedWithBackoff() async throws {
        let clock = ManualClock()
        let port = try SMTPSink.freePort()
        try await TestApp.run(.sqlite, clock: clock, adjust: { $0.smtpURL = "smtp://127.0.0.1:\(port)" }) { client, config in
            _ = try await queueTestMail(client)
            let stored = try await newestMail(config) { $0.attempts > 0 }
            #expect(stored?.attempts == 1 && stored?.status == "pending")
            #expect(stored?.nextAttemptAt == clock.now.addingTimeInterval(5))
            // The server comes up; once the retry is due the mail goes out.
            let sink = try await SMTPSink(port: port)
            defer { sink.stop() }
            clock.advance(by: 6)
            _ = try await queueTestMail(client, to: "second@example.com")
            let received = try await sink.waitForMessages(2)
            #expect(Set(received.compactMap { ReceivedMail($0).headers["to"] }) == ["ann@example.com", "second@example.com"])
        }
    }

    @Test func theDevOutboxListsMailOnlyInDevelopment() async throws {
        try await TestApp.run(.sqlite) { client, _ in
            let id = try await queueTestMail(client)
            var listed: OutboxList?
            for _ in 0..<100 {
                listed = try await client.execute(uri: "/dev/outbox", method: .get).json(OutboxList.self)
                if listed?.messages.first?.status == "sent" { break }
                try await Task.sleep(for: .milliseconds(50))
            }
            let entry = try #require(listed?.messages.first)
            #expect(entry.id == id && entry.to == "ann@example.com" && entry.status == "sent")
            #expect(entry.text?.contains("mail delivery works") == true)
        }
        try await TestApp.run(.sqlite, adjust: {
            $0.environment = .production
            $0.publicURL = URL(string: "https://auth.example.com")!
        }) { client, _ in
            let response = try await client.execute(uri: "/dev/outbox", method: .get)
            #expect(response.status == .notFound)
        }
    }
}

@Suite struct MailCrashSafetyTests {
    /// A mail queued just before `kill -9` is delivered by the next start.
    @Test(.requires(SMTPSink.python != nil, "GATEHOUSE_TEST_PYTHON"))
    func aMailQueuedBeforeACrashIsDeliveredAfterRestart() async throws {
        let port = try SMTPSink.freePort()
        let directory = try ServerProcess.makeDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let environment = [
            "GATEHOUSE_PORT": "0", "GATEHOUSE_ADMIN_KEY": TestApp.adminKey, "GATEHOUSE_SMTP_URL": "smtp://127.0.0.1:\(port)",
        ]
        let first = try ServerProcess(environment: environment, directory: directory)
        let base = try await first.baseURL()
        let queued = try await HTTP.request(
            base.appendingPathComponent("admin/v1/mail/test"), method: "POST",
            headers: ["Authorization": "Bearer \(TestApp.adminKey)", "Content-Type": "application/json"],
            body: Data(#"{"to": "crash@example.com"}"#.utf8))
        #expect(queued.status == 202)
        first.signal(SIGKILL)
        _ = try await first.exitStatus()

        let sink = try await SMTPSink(port: port)
        defer { sink.stop() }
        let second = try ServerProcess(environment: environment, directory: directory)
        _ = try await second.baseURL()
        let received = try await sink.waitForMessages()
        #expect(ReceivedMail(received[0]).headers["to"] == "crash@example.com")
        second.signal(SIGTERM)
        _ = try await second.exitStatus()
    }
}
