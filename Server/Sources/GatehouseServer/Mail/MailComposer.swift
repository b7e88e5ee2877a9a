import Foundation
import GatehouseCore
import GatehouseWire

/// Turns an outbox message into an RFC 5322 / MIME message: multipart/alternative with a
/// plain-text and an HTML part, both base64 (so no line is longer than 76 characters and none
/// starts with a dot), UTF-8 subjects as RFC 2047 encoded words, `Date` and `Message-ID`.
struct MailComposer: Sendable {
    /// `Name <address>` or a bare address.
    let from: String
    /// The domain used in `Message-ID`.
    let domain: String

    func compose(_ message: OutboxMessage, date: Date) -> String {
        let boundary = "gatehouse-" + message.id.uuidString.lowercased()
        var lines = [
            "From: \(Self.encodeDisplayName(from))",
            "To: \(message.recipient)",
            "Subject: \(Self.encodeWord(message.subject))",
            "Date: \(Self.rfc5322(date))",
            "Message-ID: <\(message.id.uuidString.lowercased())@\(domain)>",
            "MIME-Version: 1.0",
            "Auto-Submitted: auto-generated",
            // Folded so that no header line passes 78 characters.
            "Content-Type: multipart/alternative;\r\n boundary=\"\(boundary)\"",
            "",
        ]
        for (type, body) in [("text/plain", message.textBody), ("text/html", message.htmlBody)] {
            guard let body else { continue }
            lines += [
                "--\(boundary)",
                "Content-Type: \(type); charset=utf-8",
                "Content-Transfer-Encoding: base64",
                "",
            ]
            lines += Self.base64Lines(Data(body.utf8))
        }
        lines.append("--\(boundary)--")
        return lines.joined(separator: "\r\n") + "\r\n"
    }

    /// The address part of `from`, for `MAIL FROM`.
    var envelopeFrom: String { Self.address(in: from) }

    static func address(in mailbox: String) -> String {
        if let open = mailbox.lastIndex(of: "<"), let close = mailbox.lastIndex(of: ">"), open < close {
            return String(mailbox[mailbox.index(after: open)..<close])
        }
        return mailbox.trimmingCharacters(in: .whitespaces)
    }

    static func encodeWord(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: { $0.value > 126 || $0.value < 32 }) else { return text }
        return "=?UTF-8?B?\(Data(text.utf8).base64EncodedString())?="
    }

    static func encodeDisplayName(_ mailbox: String) -> String {
        guard let open = mailbox.lastIndex(of: "<") else { return mailbox }
        let name = mailbox[..<open].trimmingCharacters(in: .whitespaces)
        guard !name.isEmpty else { return mailbox }
        let quoted = name.unicodeScalars.contains { $0.value > 126 } ? encodeWord(name) : "\"\(name.replacingOccurrences(of: "\"", with: ""))\""
        return "\(quoted) <\(address(in: mailbox))>"
    }

    static func base64Lines(_ data: Data) -> [String] {
        let encoded = data.base64EncodedString()
        var lines: [String] = []
        var index = encoded.startIndex
        while index < encoded.endIndex {
            let end = encoded.index(index, offsetBy: 76, limitedBy: encoded.endIndex) ?? encoded.endIndex
            lines.append(String(encoded[index..<end]))
            index = end
        }
        return lines
    }

    static func rfc5322(_ date: Date) -> String {
        utcFormat(date, "EEE, dd MMM yyyy HH:mm:ss '+0000'")
    }

    /// SMTP transparency (RFC 5321 §4.5.2): a line that starts with a dot gets another.
    static func dotStuffed(_ message: String) -> String {
        message.components(separatedBy: "\r\n").map { $0.hasPrefix(".") ? "." + $0 : $0 }.joined(separator: "\r\n")
    }
}
