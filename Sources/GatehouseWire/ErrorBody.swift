/// The body of every error response: `{"error": {"code": …, "message": …}}`.
public struct ErrorBody: Codable, Sendable, Hashable {
    public var error: ErrorPayload

    public init(error: ErrorPayload) { self.error = error }

    enum CodingKeys: String, CodingKey {
        case error
    }
}

/// The inside of an error response.
public struct ErrorPayload: Codable, Sendable, Hashable {
    /// Stable machine code, e.g. `invalid_credentials`.
    public var code: ErrorCode
    /// A message fit to show a person.
    public var message: String
    /// Seconds to wait before retrying (also sent as `Retry-After`).
    public var retryAfter: Int?
    /// Structured extra information, e.g. a gate decision or a merge token.
    public var details: [String: JSONValue]?
    /// Every rule that failed, e.g. for `weak_password`.
    public var reasons: [String]?

    public init(
        code: ErrorCode, message: String, retryAfter: Int? = nil,
        details: [String: JSONValue]? = nil, reasons: [String]? = nil
    ) {
        self.code = code
        self.message = message
        self.retryAfter = retryAfter
        self.details = details
        self.reasons = reasons
    }

    enum CodingKeys: String, CodingKey {
        case code
        case message
        case retryAfter = "retry_after"
        case details
        case reasons
    }
}
