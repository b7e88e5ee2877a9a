/// An arbitrary JSON value, for the open-ended parts of the wire format
/// (`error.details`, event properties, preset copy).
public enum JSONValue: Sendable, Hashable, Codable {
    case null
    case bool(Bool)
    case number(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode(Double.self) {
            self = .number(value)
        } else if let value = try? container.decode(String.self) {
            self = .string(value)
        } else if let value = try? container.decode([JSONValue].self) {
            self = .array(value)
        } else {
            self = .object(try container.decode([String: JSONValue].self))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .null: try container.encodeNil()
        case .bool(let value): try container.encode(value)
        case .number(let value):
            if let whole = Self.wholeNumber(value) {
                try container.encode(whole)
            } else {
                try container.encode(value)
            }
        case .string(let value): try container.encode(value)
        case .array(let value): try container.encode(value)
        case .object(let value): try container.encode(value)
        }
    }

    /// `value` as the integer a number goes out as: a whole number within 2^53 is written without
    /// a fractional part, so clients decoding Int stay happy; nil for any other.
    public static func wholeNumber(_ value: Double) -> Int64? {
        value.rounded() == value && abs(value) < 9_007_199_254_740_992 ? Int64(value) : nil
    }

    /// The string inside, if this is a string.
    public var stringValue: String? {
        if case .string(let value) = self { return value }
        return nil
    }
}
