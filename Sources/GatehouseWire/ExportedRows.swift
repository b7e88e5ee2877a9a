// The rows of `AccountExport` (split from Profile.swift): what each table holds about the
// person, without secrets.

/// A recovery code in an export: its times only, never the code or its hash.
public struct ExportedRecoveryCode: Codable, Sendable, Hashable {
    public var createdAt: String
    public var usedAt: String?
    public init(createdAt: String, usedAt: String?) {
        self.createdAt = createdAt
        self.usedAt = usedAt
    }
    enum CodingKeys: String, CodingKey {
        case createdAt = "created_at"
        case usedAt = "used_at"
    }
}

/// A sign-in's second-factor challenge in an export.
public struct ExportedMFAChallenge: Codable, Sendable, Hashable {
    public var createdAt: String
    public var expiresAt: String
    public var attempts: Int
    public init(createdAt: String, expiresAt: String, attempts: Int) {
        self.createdAt = createdAt
        self.expiresAt = expiresAt
        self.attempts = attempts
    }
    enum CodingKeys: String, CodingKey {
        case attempts
        case createdAt = "created_at"
        case expiresAt = "expires_at"
    }
}

/// An open passkey ceremony in an export.
public struct ExportedPasskeyChallenge: Codable, Sendable, Hashable {
    /// `registration` or `authentication`.
    public var ceremony: String
    public var createdAt: String
    public var expiresAt: String
    public init(ceremony: String, createdAt: String, expiresAt: String) {
        self.ceremony = ceremony
        self.createdAt = createdAt
        self.expiresAt = expiresAt
    }
    enum CodingKeys: String, CodingKey {
        case ceremony
        case createdAt = "created_at"
        case expiresAt = "expires_at"
    }
}

/// One counted use of a usage meter in an export.
public struct ExportedUsage: Codable, Sendable, Hashable {
    public var meter: String
    public var amount: Int
    public var periodStart: String
    public var createdAt: String
    public init(meter: String, amount: Int, periodStart: String, createdAt: String) {
        self.meter = meter
        self.amount = amount
        self.periodStart = periodStart
        self.createdAt = createdAt
    }
    enum CodingKeys: String, CodingKey {
        case meter, amount
        case periodStart = "period_start"
        case createdAt = "created_at"
    }
}

/// A usage meter's count for one period in an export.
public struct ExportedUsageCount: Codable, Sendable, Hashable {
    public var meter: String
    public var periodStart: String
    public var used: Int
    public init(meter: String, periodStart: String, used: Int) {
        self.meter = meter
        self.periodStart = periodStart
        self.used = used
    }
    enum CodingKeys: String, CodingKey {
        case meter, used
        case periodStart = "period_start"
    }
}

/// An App Store subscription in an export.
public struct ExportedSubscription: Codable, Sendable, Hashable {
    public var originalTransactionID: String
    public var productID: String
    public var environment: String
    public var status: String
    public var expiresAt: String?
    public var willRenew: Bool
    public var updatedAt: String
    public init(
        originalTransactionID: String, productID: String, environment: String, status: String, expiresAt: String?, willRenew: Bool,
        updatedAt: String
    ) {
        self.originalTransactionID = originalTransactionID
        self.productID = productID
        self.environment = environment
        self.status = status
        self.expiresAt = expiresAt
        self.willRenew = willRenew
        self.updatedAt = updatedAt
    }
    enum CodingKeys: String, CodingKey {
        case originalTransactionID = "original_transaction_id"
        case productID = "product_id"
        case environment, status
        case expiresAt = "expires_at"
        case willRenew = "will_renew"
        case updatedAt = "updated_at"
    }
}

/// A credit spend in an export.
public struct ExportedCreditSpend: Codable, Sendable, Hashable {
    public var credit: String
    public var amount: Int
    public var action: String
    public var subject: String?
    public var createdAt: String
    public init(credit: String, amount: Int, action: String, subject: String?, createdAt: String) {
        self.credit = credit
        self.amount = amount
        self.action = action
        self.subject = subject
        self.createdAt = createdAt
    }
    enum CodingKeys: String, CodingKey {
        case credit, amount, action, subject
        case createdAt = "created_at"
    }
}
