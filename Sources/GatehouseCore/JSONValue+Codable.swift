import Foundation
import GatehouseWire

/// Typed values to and from the open-ended JSON of `error.details` (a gate decision, a
/// refusal's factors), through the same encoding the wire uses.
extension JSONValue {
    /// `value` as it would go out in JSON; nil when it does not encode.
    public init?(encoding value: some Encodable) {
        guard let data = try? JSONEncoder().encode(value), let decoded = try? JSONDecoder().decode(JSONValue.self, from: data) else { return nil }
        self = decoded
    }

    /// This value read as `type`, as a client decoding the same JSON would; nil when it does not fit.
    public func decoded<T: Decodable>(as type: T.Type) -> T? {
        guard let data = try? JSONEncoder().encode(self) else { return nil }
        return try? JSONDecoder().decode(type, from: data)
    }

    /// The members, if this is an object.
    public var objectValue: [String: JSONValue]? {
        if case .object(let members) = self { return members }
        return nil
    }
}
