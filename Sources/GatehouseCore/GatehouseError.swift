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

    public var description: String { "\(status) \(code): \(message)" }

    public var payload: ErrorPayload {
        ErrorPayload(code: code, message: message, retryAfter: retryAfter, details: details, reasons: reasons)
    }
}

extension GatehouseError {
    public static func invalidRequest(_ message: String) -> GatehouseError {
        GatehouseError(status: 400, code: .invalidRequest, message: message)
    }

    public static func notFound(_ message: String = "Not found.") -> GatehouseError {
        GatehouseError(status: 404, code: .notFound, message: message)
    }

    public static func unauthorized(_ message: String = "Authentication required.") -> GatehouseError {
        GatehouseError(status: 401, code: .unauthorized, message: message)
    }

    public static func payloadTooLarge(limit: Int) -> GatehouseError {
        GatehouseError(
            status: 413, code: .payloadTooLarge,
            message: "The request body is larger than the limit of \(limit) bytes.")
    }

    public static func internalError(_ underlying: (any Error)?, message: String = "Something went wrong on our end. Please try again in a few minutes.") -> GatehouseError {
        GatehouseError(status: 500, code: .internalError, message: message, underlying: underlying)
    }

    public static func serviceUnavailable(_ underlying: (any Error)?) -> GatehouseError {
        GatehouseError(
            status: 503, code: .serviceUnavailable,
            message: "The service is temporarily unavailable. Please try again shortly.",
            retryAfter: 5, underlying: underlying)
    }
}
