import Foundation
import GatehouseCore
import GatehouseWire

/// `SEND_EMAIL` (issue 63): every mail goes to the app's own endpoint instead of SMTP, through the
/// one `HookCaller`, with what the app needs to send it as it is or render its own: the kind,
/// the rendered subject, text and HTML, and for a mail with a link or a code, the link, its token
/// and the code (`MailTokens`). Like SMTP it is delivered from the outbox: a failed call is
/// tried again with the outbox's backoff under the same `webhook-id` (the mail's), so the app can
/// drop a repeat; a mail is never sent while the person waits.
struct EmailHookTransport: MailTransport {
    let endpoint: HookEndpoint
    let caller: HookCaller
    /// The link, token and code leave with the call: the outbox keeps none of them once sent.
    var keepsBodies: Bool { false }

    func deliver(_ message: OutboxMessage) async throws {
        let body: Data
        switch endpoint.format {
        case .gatehouse: body = try AuthHooks.envelope(.sendEmail, at: caller.clock.now, data: Self.payload(message))
        case .supabase: body = try SupabaseHookFormat.sendEmail(message)
        }
        // Any 2xx is taken: what it says is not read.
        try await caller.post(
            HookName.sendEmail.label, url: endpoint.url, secret: endpoint.secret, id: "msg_" + message.id.uuidString.lowercased(), body: body
        ) { _ in () }
    }

    /// `SEND_EMAIL`'s `data`.
    static func payload(_ message: OutboxMessage) -> [String: Any] {
        var data: [String: Any] = [
            "mail_id": message.id.uuidString.lowercased(), "kind": message.kind, "to": message.recipient, "subject": message.subject,
            "text": message.textBody ?? "", "html": message.htmlBody ?? NSNull(),
        ]
        let tokens = MailTokens(message)
        if let link = tokens.link {
            data["link"] = link.absoluteString
            data["token"] = tokens.token ?? NSNull()
        }
        if let code = tokens.code { data["code"] = code }
        return data
    }
}

/// What a mail's link and code are, kept on its outbox row (`payload`) until it is sent, for a
/// `SEND_EMAIL` hook that renders its own mail. The row's bodies and payload are cleared together
/// once it is sent or given up.
struct MailTokens: Sendable, Equatable {
    var link: URL?
    var code: String?

    static let linkKey = "link"
    static let codeKey = "code"

    init(link: URL?, code: String?) { (self.link, self.code) = (link, code) }

    init(_ message: OutboxMessage) {
        link = message.payload?[Self.linkKey].flatMap(URL.init(string:))
        code = message.payload?[Self.codeKey]
    }

    /// The row's payload; nil for a mail with neither.
    var payload: [String: String]? {
        var payload: [String: String] = [:]
        payload[Self.linkKey] = link?.absoluteString
        payload[Self.codeKey] = code
        return payload.isEmpty ? nil : payload
    }

    /// The link's token (its `token` query item): what `/auth/v1/verify` takes as `token_hash`.
    var token: String? { queryItem("token") }

    /// The link's `redirect_to`, when it carries one.
    var redirectTo: String? { queryItem("redirect_to") }

    private func queryItem(_ name: String) -> String? {
        link.flatMap { URLComponents(url: $0, resolvingAgainstBaseURL: false) }?.queryItems?.first { $0.name == name }?.value
    }
}
