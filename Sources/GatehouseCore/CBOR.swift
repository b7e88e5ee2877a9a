import Foundation
import GatehouseWire

/// A CBOR data item (RFC 8949) of the kinds WebAuthn uses: integers, byte and text strings,
/// arrays, maps, booleans and null. Nothing else is read (see `CBORReader`).
public indirect enum CBOR: Sendable, Equatable {
    case unsigned(UInt64)
    /// The negative integer −1 − n.
    case negative(UInt64)
    case bytes([UInt8])
    case text(String)
    case array([CBOR])
    /// Keys in the order they were written.
    case map([CBORPair])
    case bool(Bool)
    case null

    /// The value as a signed integer, when it is one that fits.
    public var integer: Int64? {
        switch self {
        case .unsigned(let n): n <= UInt64(Int64.max) ? Int64(n) : nil
        case .negative(let n): n <= UInt64(Int64.max) ? -1 - Int64(n) : nil
        default: nil
        }
    }

    public var byteString: [UInt8]? {
        if case .bytes(let bytes) = self { bytes } else { nil }
    }

    public var textString: String? {
        if case .text(let text) = self { text } else { nil }
    }

    /// The value under the integer key `key` of a map (COSE keys are keyed this way).
    public subscript(int key: Int64) -> CBOR? {
        guard case .map(let pairs) = self else { return nil }
        return pairs.first { $0.key.integer == key }?.value
    }

    /// The value under the text key `key` of a map (attestation objects are keyed this way).
    public subscript(text key: String) -> CBOR? {
        guard case .map(let pairs) = self else { return nil }
        return pairs.first { $0.key.textString == key }?.value
    }
}

public struct CBORPair: Sendable, Equatable {
    public var key: CBOR
    public var value: CBOR

    public init(key: CBOR, value: CBOR) {
        self.key = key
        self.value = value
    }
}

/// Why bytes are not the CBOR `CBORReader` accepts.
public enum CBORError: Error, Sendable, Equatable {
    /// The bytes end inside an item.
    case truncated
    /// An indefinite-length string, array or map (major types 2–5 with additional info 31).
    case indefiniteLength
    /// Nesting deeper than the reader's limit.
    case tooDeep
    /// More bytes or items than the reader's limits allow.
    case tooLarge
    /// Tags, floats, undefined and simple values other than false, true and null.
    case unsupported
    /// A text string that is not UTF-8, a map key given twice, or a reserved encoding.
    case malformed
    /// Bytes after the item where none may follow.
    case trailingBytes
}

/// A small strict CBOR reader for WebAuthn's attestation objects and COSE keys: definite
/// lengths only, no tags, no floats, nesting and size capped, duplicate map keys refused.
/// Anything it does not accept is an error, never a guess.
public struct CBORReader: Sendable {
    /// The deepest nesting of arrays and maps accepted.
    public var maxDepth = 8
    /// The most items (of every level together) one call reads.
    public var maxItems = 512
    /// The most bytes one call reads.
    public var maxBytes = 16 * 1024

    public init() {}

    /// Reads exactly one item that fills `bytes`.
    public func decode(_ bytes: [UInt8]) throws(CBORError) -> CBOR {
        let (item, used) = try decodePrefix(bytes)
        guard used == bytes.count else { throw .trailingBytes }
        return item
    }

    /// Reads one item at the start of `bytes` and says how many bytes it took (the COSE key in
    /// authenticator data is followed by extensions).
    public func decodePrefix(_ bytes: [UInt8]) throws(CBORError) -> (CBOR, Int) {
        guard bytes.count <= maxBytes else { throw .tooLarge }
        var cursor = Cursor(bytes: bytes, limits: self)
        let item = try cursor.item(depth: 0)
        return (item, cursor.offset)
    }

    private struct Cursor {
        let bytes: [UInt8]
        let limits: CBORReader
        var offset = 0
        var items = 0

        init(bytes: [UInt8], limits: CBORReader) {
            self.bytes = bytes
            self.limits = limits
        }

        mutating func byte() throws(CBORError) -> UInt8 {
            guard offset < bytes.count else { throw .truncated }
            defer { offset += 1 }
            return bytes[offset]
        }

        mutating func take(_ count: UInt64) throws(CBORError) -> [UInt8] {
            guard count <= UInt64(bytes.count - offset) else { throw .truncated }
            let end = offset + Int(count)
            defer { offset = end }
            return Array(bytes[offset..<end])
        }

        /// The argument of a head: the additional information itself or the 1, 2, 4 or 8
        /// bytes after it.
        mutating func argument(_ info: UInt8) throws(CBORError) -> UInt64 {
            switch info {
            case 0...23: return UInt64(info)
            case 24...27:
                var value: UInt64 = 0
                for byte in try take(1 << UInt64(info - 24)) { value = value << 8 | UInt64(byte) }
                return value
            case 31: throw .indefiniteLength
            default: throw .malformed
            }
        }

        mutating func item(depth: Int) throws(CBORError) -> CBOR {
            items += 1
            guard items <= limits.maxItems else { throw .tooLarge }
            let head = try byte()
            let major = head >> 5
            let info = head & 0x1f
            if major == 7 {
                switch info {
                case 20: return .bool(false)
                case 21: return .bool(true)
                case 22: return .null
                case 31: throw .indefiniteLength
                default: throw .unsupported
                }
            }
            if major == 6 { throw .unsupported }
            let argument = try argument(info)
            switch major {
            case 0: return .unsigned(argument)
            case 1: return .negative(argument)
            case 2: return .bytes(try take(argument))
            case 3:
                guard let text = String(validating: try take(argument), as: UTF8.self) else { throw .malformed }
                return .text(text)
            case 4:
                guard depth < limits.maxDepth else { throw .tooDeep }
                guard argument <= UInt64(limits.maxItems) else { throw .tooLarge }
                var elements: [CBOR] = []
                for _ in 0..<argument { elements.append(try item(depth: depth + 1)) }
                return .array(elements)
            default:  // 5: a map
                guard depth < limits.maxDepth else { throw .tooDeep }
                guard argument <= UInt64(limits.maxItems) else { throw .tooLarge }
                var pairs: [CBORPair] = []
                for _ in 0..<argument {
                    let key = try item(depth: depth + 1)
                    guard !pairs.contains(where: { $0.key == key }) else { throw .malformed }
                    pairs.append(CBORPair(key: key, value: try item(depth: depth + 1)))
                }
                return .map(pairs)
            }
        }
    }
}
