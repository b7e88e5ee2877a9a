import Foundation

/// A coding key for any string, used to see every key an object really has.
struct AnyCodingKey: CodingKey {
    var stringValue: String
    var intValue: Int?
    init(stringValue: String) { self.stringValue = stringValue }
    init?(intValue: Int) {
        self.stringValue = String(intValue)
        self.intValue = intValue
    }
}

extension Decoder {
    /// Throws when the object being decoded has a key that `keys` does not list, so that a
    /// misspelt preset setting is refused instead of silently ignored.
    func rejectUnknownKeys<Keys: CodingKey & CaseIterable>(_ keys: Keys.Type) throws {
        // Only preset files are strict; `/v1/config` readers (the SDK) must tolerate new keys.
        guard userInfo[.strictKeys] as? Bool == true else { return }
        let container = try container(keyedBy: AnyCodingKey.self)
        let known = Set(Keys.allCases.map(\.stringValue))
        for key in container.allKeys where !known.contains(key.stringValue) {
            let expected = Keys.allCases.map(\.stringValue).sorted().joined(separator: ", ")
            throw DecodingError.dataCorrupted(
                .init(
                    codingPath: codingPath + [key],
                    debugDescription: "unknown key (expected one of: \(expected))"))
        }
    }
}

extension CodingUserInfoKey {
    /// Set to `true` to refuse unknown keys while decoding presets.
    public static let strictKeys = CodingUserInfoKey(rawValue: "gatehouse.strict-keys")!
}

extension KeyedDecodingContainer {
    /// The value when present, else the default. A present value of the wrong type still throws.
    func value<T: Decodable>(_ key: Key, or fallback: T) throws -> T {
        try decodeIfPresent(T.self, forKey: key) ?? fallback
    }
}

/// Describes a decoding error as one readable line naming the key path.
public func describeDecodingError(_ error: any Error) -> String {
    guard let error = error as? DecodingError else {
        return "\(error)"
    }
    func path(_ codingPath: [any CodingKey]) -> String {
        let parts = codingPath.map { key -> String in
            if let index = key.intValue { return "[\(index)]" }
            return key.stringValue
        }
        var text = ""
        for part in parts {
            if part.hasPrefix("[") || text.isEmpty { text += part } else { text += "." + part }
        }
        return text.isEmpty ? "(top level)" : text
    }
    switch error {
    case .typeMismatch(let type, let context):
        return "'\(path(context.codingPath))': expected \(typeName(type))"
    case .valueNotFound(let type, let context):
        return "'\(path(context.codingPath))': expected \(typeName(type)), found null"
    case .keyNotFound(let key, let context):
        return "'\(path(context.codingPath + [key]))': required key is missing"
    case .dataCorrupted(let context):
        if context.codingPath.isEmpty {
            return "not valid JSON (\(context.underlyingError.map { "\($0)" } ?? context.debugDescription))"
        }
        return "'\(path(context.codingPath))': \(context.debugDescription)"
    @unknown default:
        return "\(error)"
    }
}

private func typeName(_ type: Any.Type) -> String {
    switch type {
    case is Int.Type, is Int64.Type, is Int32.Type: return "an integer"
    case is Double.Type: return "a number"
    case is String.Type: return "a string"
    case is Bool.Type: return "true or false"
    default:
        let name = String(describing: type)
        if name.hasPrefix("Array") { return "an array" }
        if name.hasPrefix("Dictionary") { return "an object" }
        return "a value of type \(name)"
    }
}
