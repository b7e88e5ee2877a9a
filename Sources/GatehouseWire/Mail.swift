/// `POST /admin/v1/mail/test`: send a test mail to check the mail setup.
public struct MailTestRequest: Codable, Sendable, Hashable {
    public var to: String
    public init(to: String) { self.to = to }
    enum CodingKeys: String, CodingKey {
        case to
    }
}

/// `202` answer of `POST /admin/v1/mail/test`.
public struct MailQueued: Codable, Sendable, Hashable {
    public var id: String
    public init(id: String) { self.id = id }
    enum CodingKeys: String, CodingKey {
        case id
    }
}

/// One mail of `GET /dev/outbox`.
public struct OutboxEntry: Codable, Sendable, Hashable {
    public var id: String
    public var createdAt: String
    public var kind: String
    public var to: String
    public var subject: String
    public var text: String?
    public var html: String?
    public var status: String
    public var attempts: Int

    public init(
        id: String, createdAt: String, kind: String, to: String, subject: String, text: String?, html: String?, status: String,
        attempts: Int
    ) {
        self.id = id
        self.createdAt = createdAt
        self.kind = kind
        self.to = to
        self.subject = subject
        self.text = text
        self.html = html
        self.status = status
        self.attempts = attempts
    }

    enum CodingKeys: String, CodingKey {
        case id
        case createdAt = "created_at"
        case kind, to, subject, text, html, status, attempts
    }
}

/// `GET /dev/outbox`: newest first.
public struct OutboxList: Codable, Sendable, Hashable {
    public var messages: [OutboxEntry]
    public init(messages: [OutboxEntry]) { self.messages = messages }
    enum CodingKeys: String, CodingKey {
        case messages
    }
}
