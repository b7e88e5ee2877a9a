import Foundation

/// Writes an `Encodable` value as the same bytes Foundation's `JSONEncoder` gives with
/// `[.sortedKeys, .withoutEscapingSlashes]` and its default strategies for dates, data, URLs and
/// decimals, with less machinery: no boxed values, no dynamic casts for every scalar, keys
/// compared as bytes. Every JSON answer goes through it (`JSONBody`, `EncodedDocument`);
/// `CompactJSONTests` holds its output to `JSONEncoder`'s, byte for byte (issue 47: Foundation's
/// encoder led the profile of the signed-in reads).
enum CompactJSON {
    static func encode(_ value: some Encodable) throws -> [UInt8] {
        let root = Slot()
        try root.encode(value)
        var out: [UInt8] = []
        out.reserveCapacity(1024)
        try root.value.write(into: &out)
        return out
    }

    /// A JSON value as it is being built: containers stay references until the whole value is
    /// written, since `Encoder` lets a container be filled after its parent has moved on.
    enum Value {
        case scalar([UInt8])
        case object(ObjectNode)
        case array(ArrayNode)
        case unset

        func write(into out: inout [UInt8]) throws {
            switch self {
            case .scalar(let bytes):
                out.append(contentsOf: bytes)
            case .object(let object):
                out.append(UInt8(ascii: "{"))
                let sorted = object.members.sorted { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) }
                for (index, member) in sorted.enumerated() {
                    if index > 0 { out.append(UInt8(ascii: ",")) }
                    CompactJSON.writeString(member.key, into: &out)
                    out.append(UInt8(ascii: ":"))
                    try member.slot.value.write(into: &out)
                }
                out.append(UInt8(ascii: "}"))
            case .array(let array):
                out.append(UInt8(ascii: "["))
                for (index, slot) in array.items.enumerated() {
                    if index > 0 { out.append(UInt8(ascii: ",")) }
                    try slot.value.write(into: &out)
                }
                out.append(UInt8(ascii: "]"))
            case .unset:
                // JSONEncoder refuses a value that encoded nothing at the top; nested, `{}`.
                out.append(contentsOf: Array("{}".utf8))
            }
        }
    }

    final class ObjectNode {
        var members: [(key: String, slot: Slot)] = []

        func slot(for key: String) -> Slot {
            // A key encoded again replaces its value, as in JSONEncoder.
            if let existing = members.first(where: { $0.key == key }) { return existing.slot }
            let slot = Slot()
            members.append((key, slot))
            return slot
        }
    }

    final class ArrayNode {
        var items: [Slot] = []

        func append() -> Slot {
            let slot = Slot()
            items.append(slot)
            return slot
        }
    }

    /// Where one value goes: the root, an object's member or an array's element.
    final class Slot {
        var value: Value = .unset

        func set(_ bytes: [UInt8]) { value = .scalar(bytes) }

        var object: ObjectNode {
            if case .object(let object) = value { return object }
            let object = ObjectNode()
            value = .object(object)
            return object
        }

        var array: ArrayNode {
            if case .array(let array) = value { return array }
            let array = ArrayNode()
            value = .array(array)
            return array
        }

        func encode<T: Encodable>(_ value: T) throws {
            // The types JSONEncoder writes in its own way rather than through their `encode(to:)`.
            if T.self == String.self {
                set(CompactJSON.string(value as! String))
            } else if T.self == Bool.self {
                set(Array(((value as! Bool) ? "true" : "false").utf8))
            } else if T.self == Int.self {
                set(Array(String(value as! Int).utf8))
            } else if T.self == URL.self {
                set(CompactJSON.string((value as! URL).absoluteString))
            } else if T.self == Data.self {
                set(CompactJSON.string((value as! Data).base64EncodedString()))
            } else if T.self == Decimal.self {
                set(Array((value as! Decimal).description.utf8))
            } else if T.self == Date.self {
                // `deferredToDate`: seconds since 2001 as a Double.
                set(try CompactJSON.number((value as! Date).timeIntervalSinceReferenceDate))
            } else {
                try value.encode(to: SlotEncoder(slot: self, codingPath: []))
            }
        }
    }

    static func string(_ text: String) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(text.utf8.count + 2)
        writeString(text, into: &out)
        return out
    }

    /// `"` + the text, with `"`, `\` and the control characters escaped as JSONEncoder does
    /// (slashes not: `.withoutEscapingSlashes`).
    static func writeString(_ text: String, into out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "\""): out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\"")])
            case UInt8(ascii: "\\"): out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\\")])
            case 0x08: out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "b")])
            case 0x0C: out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "f")])
            case 0x0A: out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "n")])
            case 0x0D: out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "r")])
            case 0x09: out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "t")])
            case 0..<0x20:
                let hex = Array("0123456789abcdef".utf8)
                out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0")])
                out.append(hex[Int(byte >> 4)])
                out.append(hex[Int(byte & 0xF)])
            default: out.append(byte)
            }
        }
        out.append(UInt8(ascii: "\""))
    }

    /// A floating-point number as JSONEncoder writes it: its shortest description, without a
    /// trailing `.0`; infinity and NaN refused.
    static func number<F: BinaryFloatingPoint & LosslessStringConvertible>(_ value: F) throws -> [UInt8] {
        guard value.isFinite else {
            throw EncodingError.invalidValue(value, .init(codingPath: [], debugDescription: "Unable to encode \(value) directly in JSON."))
        }
        var text = value.description
        if text.hasSuffix(".0") { text.removeLast(2) }
        return Array(text.utf8)
    }
}

/// The `Encoder` a value's `encode(to:)` is given: everything it writes lands in `slot`.
private struct SlotEncoder: Encoder {
    let slot: CompactJSON.Slot
    let codingPath: [any CodingKey]
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        KeyedEncodingContainer(KeyedSlot<Key>(object: slot.object, codingPath: codingPath))
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        UnkeyedSlot(array: slot.array, codingPath: codingPath)
    }

    func singleValueContainer() -> any SingleValueEncodingContainer {
        SingleSlot(slot: slot, codingPath: codingPath)
    }
}

private struct KeyedSlot<Key: CodingKey>: KeyedEncodingContainerProtocol {
    let object: CompactJSON.ObjectNode
    let codingPath: [any CodingKey]

    func encodeNil(forKey key: Key) throws { object.slot(for: key.stringValue).set(Array("null".utf8)) }
    func encode(_ value: Bool, forKey key: Key) throws { object.slot(for: key.stringValue).set(Array((value ? "true" : "false").utf8)) }
    func encode(_ value: String, forKey key: Key) throws { object.slot(for: key.stringValue).set(CompactJSON.string(value)) }
    func encode(_ value: Double, forKey key: Key) throws { object.slot(for: key.stringValue).set(try CompactJSON.number(value)) }
    func encode(_ value: Float, forKey key: Key) throws { object.slot(for: key.stringValue).set(try CompactJSON.number(value)) }
    func encode(_ value: Int, forKey key: Key) throws { object.slot(for: key.stringValue).set(Array(String(value).utf8)) }
    func encode(_ value: Int8, forKey key: Key) throws { object.slot(for: key.stringValue).set(Array(String(value).utf8)) }
    func encode(_ value: Int16, forKey key: Key) throws { object.slot(for: key.stringValue).set(Array(String(value).utf8)) }
    func encode(_ value: Int32, forKey key: Key) throws { object.slot(for: key.stringValue).set(Array(String(value).utf8)) }
    func encode(_ value: Int64, forKey key: Key) throws { object.slot(for: key.stringValue).set(Array(String(value).utf8)) }
    func encode(_ value: UInt, forKey key: Key) throws { object.slot(for: key.stringValue).set(Array(String(value).utf8)) }
    func encode(_ value: UInt8, forKey key: Key) throws { object.slot(for: key.stringValue).set(Array(String(value).utf8)) }
    func encode(_ value: UInt16, forKey key: Key) throws { object.slot(for: key.stringValue).set(Array(String(value).utf8)) }
    func encode(_ value: UInt32, forKey key: Key) throws { object.slot(for: key.stringValue).set(Array(String(value).utf8)) }
    func encode(_ value: UInt64, forKey key: Key) throws { object.slot(for: key.stringValue).set(Array(String(value).utf8)) }
    func encode<T: Encodable>(_ value: T, forKey key: Key) throws { try object.slot(for: key.stringValue).encode(value) }

    func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type, forKey key: Key) -> KeyedEncodingContainer<NestedKey> {
        KeyedEncodingContainer(KeyedSlot<NestedKey>(object: object.slot(for: key.stringValue).object, codingPath: codingPath + [key]))
    }

    func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
        UnkeyedSlot(array: object.slot(for: key.stringValue).array, codingPath: codingPath + [key])
    }

    func superEncoder() -> any Encoder { SlotEncoder(slot: object.slot(for: "super"), codingPath: codingPath) }
    func superEncoder(forKey key: Key) -> any Encoder { SlotEncoder(slot: object.slot(for: key.stringValue), codingPath: codingPath + [key]) }
}

private struct UnkeyedSlot: UnkeyedEncodingContainer {
    let array: CompactJSON.ArrayNode
    let codingPath: [any CodingKey]
    var count: Int { array.items.count }

    func encodeNil() throws { array.append().set(Array("null".utf8)) }
    func encode(_ value: Bool) throws { array.append().set(Array((value ? "true" : "false").utf8)) }
    func encode(_ value: String) throws { array.append().set(CompactJSON.string(value)) }
    func encode(_ value: Double) throws { array.append().set(try CompactJSON.number(value)) }
    func encode(_ value: Float) throws { array.append().set(try CompactJSON.number(value)) }
    func encode(_ value: Int) throws { array.append().set(Array(String(value).utf8)) }
    func encode(_ value: Int8) throws { array.append().set(Array(String(value).utf8)) }
    func encode(_ value: Int16) throws { array.append().set(Array(String(value).utf8)) }
    func encode(_ value: Int32) throws { array.append().set(Array(String(value).utf8)) }
    func encode(_ value: Int64) throws { array.append().set(Array(String(value).utf8)) }
    func encode(_ value: UInt) throws { array.append().set(Array(String(value).utf8)) }
    func encode(_ value: UInt8) throws { array.append().set(Array(String(value).utf8)) }
    func encode(_ value: UInt16) throws { array.append().set(Array(String(value).utf8)) }
    func encode(_ value: UInt32) throws { array.append().set(Array(String(value).utf8)) }
    func encode(_ value: UInt64) throws { array.append().set(Array(String(value).utf8)) }
    func encode<T: Encodable>(_ value: T) throws { try array.append().encode(value) }

    func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type) -> KeyedEncodingContainer<NestedKey> {
        KeyedEncodingContainer(KeyedSlot<NestedKey>(object: array.append().object, codingPath: codingPath))
    }

    func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer { UnkeyedSlot(array: array.append().array, codingPath: codingPath) }
    func superEncoder() -> any Encoder { SlotEncoder(slot: array.append(), codingPath: codingPath) }
}

private struct SingleSlot: SingleValueEncodingContainer {
    let slot: CompactJSON.Slot
    let codingPath: [any CodingKey]

    func encodeNil() throws { slot.set(Array("null".utf8)) }
    func encode(_ value: Bool) throws { slot.set(Array((value ? "true" : "false").utf8)) }
    func encode(_ value: String) throws { slot.set(CompactJSON.string(value)) }
    func encode(_ value: Double) throws { slot.set(try CompactJSON.number(value)) }
    func encode(_ value: Float) throws { slot.set(try CompactJSON.number(value)) }
    func encode(_ value: Int) throws { slot.set(Array(String(value).utf8)) }
    func encode(_ value: Int8) throws { slot.set(Array(String(value).utf8)) }
    func encode(_ value: Int16) throws { slot.set(Array(String(value).utf8)) }
    func encode(_ value: Int32) throws { slot.set(Array(String(value).utf8)) }
    func encode(_ value: Int64) throws { slot.set(Array(String(value).utf8)) }
    func encode(_ value: UInt) throws { slot.set(Array(String(value).utf8)) }
    func encode(_ value: UInt8) throws { slot.set(Array(String(value).utf8)) }
    func encode(_ value: UInt16) throws { slot.set(Array(String(value).utf8)) }
    func encode(_ value: UInt32) throws { slot.set(Array(String(value).utf8)) }
    func encode(_ value: UInt64) throws { slot.set(Array(String(value).utf8)) }
    func encode<T: Encodable>(_ value: T) throws { try slot.encode(value) }
}
