import Foundation
import GatehouseWire

/// A coding key for any string, used to see every key an object really has.
struct AnyCodingKey: CodingKey, ExpressibleByStringLiteral {
    var stringValue: String
    var intValue: Int?
    init(stringValue: String) { self.stringValue = stringValue }
    init(stringLiteral value: String) { self.stringValue = value }
    init?(intValue: Int) {
        self.stringValue = String(intValue)
        self.intValue = intValue
    }
}

extension Decoder {
    /// Whether unknown keys are refused: only preset files are strict; `/v1/config` readers
    /// (the SDK) must tolerate what a newer server adds.
    var isStrict: Bool { userInfo[.strictKeys] as? Bool == true }

    /// Throws when the object being decoded has a key that `keys` does not list, so that a
    /// misspelt preset setting is refused instead of silently ignored.
    func rejectUnknownKeys(_ keys: [String]) throws {
        guard isStrict else { return }
        let container = try container(keyedBy: AnyCodingKey.self)
        let known = Set(keys)
        for key in container.allKeys where !known.contains(key.stringValue) {
            throw DecodingError.dataCorrupted(
                .init(
                    codingPath: codingPath + [key],
                    debugDescription: "unknown key (expected one of: \(keys.sorted().joined(separator: ", ")))"))
        }
    }

    /// Decodes a preset section: refuses keys `fields` does not list, builds the value with
    /// `start` (from its required keys), then lets each other key that is present replace its
    /// default.
    func section<Root>(_ fields: [PresetField<Root>], start: (KeyedDecodingContainer<AnyCodingKey>) throws -> Root) throws -> Root {
        try rejectUnknownKeys(fields.map(\.key))
        let container = try container(keyedBy: AnyCodingKey.self)
        var value = try start(container)
        for field in fields { try field.decode?(container, &value) }
        return value
    }
}

extension CodingUserInfoKey {
    /// Set to `true` to refuse unknown keys while decoding presets.
    public static let strictKeys = CodingUserInfoKey(rawValue: "gatehouse.strict-keys")!
}

/// One key of a preset section and the property it fills. Each setting's JSON name is written
/// once, beside its property's path; decoding, encoding and the unknown-key message read it here.
struct PresetField<Root> {
    let key: String
    /// Fills the property when the key is present; `nil` for a key the section decodes first
    /// (`Decoder.section`'s `start`).
    let decode: ((KeyedDecodingContainer<AnyCodingKey>, inout Root) throws -> Void)?
    let encode: (Root, inout KeyedEncodingContainer<AnyCodingKey>) throws -> Void

    /// A setting with a default: a value that is present replaces it (`null` keeps it). A value
    /// of the wrong type still throws.
    static func key<T: Codable>(_ key: String, _ path: WritableKeyPath<Root, T>) -> PresetField {
        PresetField(
            key: key,
            decode: { container, root in
                if let value = try container.decodeIfPresent(T.self, forKey: AnyCodingKey(stringValue: key)) { root[keyPath: path] = value }
            },
            encode: { root, container in try container.encode(root[keyPath: path], forKey: AnyCodingKey(stringValue: key)) })
    }

    /// An optional setting: absent or `null` is `nil`, and `nil` is left out of the encoding.
    static func key<T: Codable>(_ key: String, _ path: WritableKeyPath<Root, T?>) -> PresetField {
        PresetField(
            key: key,
            decode: { container, root in root[keyPath: path] = try container.decodeIfPresent(T.self, forKey: AnyCodingKey(stringValue: key)) },
            encode: { root, container in try container.encodeIfPresent(root[keyPath: path], forKey: AnyCodingKey(stringValue: key)) })
    }

    /// A key the section's `start` decodes: a required one, or one decoded its own way.
    static func decodedFirst<T: Codable>(_ key: String, _ path: KeyPath<Root, T>) -> PresetField {
        PresetField(
            key: key, decode: nil,
            encode: { root, container in try container.encode(root[keyPath: path], forKey: AnyCodingKey(stringValue: key)) })
    }
}

/// A part of a preset written as its `fields`: encoded from them, and decoded from them by its
/// own `init(from:)` (one with required keys) or `PresetSection`'s.
protocol PresetCodable: Codable {
    /// The keys in decoding order.
    static var fields: [PresetField<Self>] { get }
}

extension PresetCodable {
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: AnyCodingKey.self)
        for field in Self.fields { try field.encode(self, &container) }
    }
}

/// A part of a preset whose every key has a default (`init()`), so a file names only what it
/// changes.
protocol PresetSection: PresetCodable {
    init()
}

extension PresetSection {
    public init(from decoder: any Decoder) throws {
        self = try decoder.section(Self.fields) { _ in Self() }
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
