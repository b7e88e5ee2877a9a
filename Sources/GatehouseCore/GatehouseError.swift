import GatehouseWire

/// The one error type that services throw and the server turns into the contract's error
/// shape. `underlying` is logged and never sent.
public struct GatehouseError: Error, Sendable, CustomStringConvertible {
    public var status: Int
    public var code: ErrorCode
    /// Fit to show a person.
    public var message: String
    public var retryAfter: Int?
    public var details: [String: JSONValue]?
    public var reasons: [String]?
    /// The internal cause, for logs only.
    public var underlying: (any Error)?

    public init(
        status: Int, code: ErrorCode, message: String, retryAfter: Int? = nil,
        details: [String: JSONValue]? = nil, reasons: [String]? = nil, underlying: (any Error)? = nil
    ) {
        self.status = status
        self.code = code
        self.message = message
        self.retryAfter = retryAfter
        self.details = details
        self.reasons = reasons
        self.underlying = underlying
    }

    /// An error answered with its code's one default status (`ErrorCode.defaultStatus`, the
    /// table in docs/errors.md). The other initializer names a status of its own: only
    /// `token_expired` needs one (400 for a link or code, where its default is 401 for an
    /// access token).
    public init(
        _ code: ErrorCode, _ message: String, retryAfter: Int? = nil, details: [String: JSONValue]? = nil, reasons: [String]? = nil,
        underlying: (any Error)? = nil
    ) {
        self.init(
            status: code.defaultStatus, code: code, message: message, retryAfter: retryAfter, details: details, reasons: reasons,
            underlying: underlying)
    }

    public var description: String { "\(status) \(code): \(message)" }

    public var payload: ErrorPayload {
        ErrorPayload(code: code, message: message, retryAfter: retryAfter, details: details, reasons: reasons)
    }
}

extension GatehouseError {
    public static func invalidRequest(_ message: String) -> GatehouseError {
        GatehouseError(.invalidRequest, message)
    }

    public static func notFound(_ message: String = "Not found.") -> GatehouseError {
        GatehouseError(.notFound, message)
    }

    public static func unauthorized(_ message: String = "Authentication required.") -> GatehouseError {
        GatehouseError(.unauthorized, message)
    }

    public static func payloadTooLarge(limit: Int) -> GatehouseError {
        GatehouseError(.payloadTooLarge, "The request body is larger than the limit of \(limit) bytes.")
    }

    public static func internalError(_ underlying: (any Error)?, message: String = "Something went wrong on our end. Please try again in a few minutes.") -> GatehouseError {
        GatehouseError(.internalError, message, underlying: underlying)
    }

    public static func serviceUnavailable(_ underlying: (any Error)?) -> GatehouseError {
        GatehouseError(
            .serviceUnavailable, "The service is temporarily unavailable. Please try again shortly.", retryAfter: 5, underlying: underlying)
    }
}
