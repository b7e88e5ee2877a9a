import Foundation

/// Checks a request body's shape before it is decoded: nesting no deeper than `maximumDepth`
/// (a deeply nested body must not cost stack or time), and no object that names a key twice
/// (`{"email": "a", "email": "b"}`, or the same through a `\u` escape), which JSON parsers
/// disagree about and which could make two components read different values.
struct JSONShape {
    static let maximumDepth = 32

    enum Problem: Error, Equatable {
        case duplicateKey(String)
        case tooDeep
        /// Not JSON at all; the decoder says where.
        case malformed
    }

    private let bytes: [UInt8]
    private var index = 0

    private init(_ bytes: [UInt8]) { self.bytes = bytes }

    /// The first problem in `data`, or nil when its shape is fine.
    static func problem(in data: Data) -> Problem? {
        var scanner = JSONShape(Array(data))
        do {
            scanner.skipSpace()
            try scanner.value(depth: 0)
            scanner.skipSpace()
            return scanner.index == scanner.bytes.count ? nil : .malformed
        } catch {
            return error
        }
    }

    private mutating func value(depth: Int) throws(Problem) {
        guard depth < Self.maximumDepth else { throw .tooDeep }
        guard index < bytes.count else { throw .malformed }
        switch bytes[index] {
        case UInt8(ascii: "{"): try object(depth: depth + 1)
        case UInt8(ascii: "["): try array(depth: depth + 1)
        case UInt8(ascii: "\""): _ = try string()
        default: try scalar()
        }
    }

    private mutating func object(depth: Int) throws(Problem) {
        index += 1
        var keys = Set<String>()
        skipSpace()
        if next == UInt8(ascii: "}") {
            index += 1
            return
        }
        while true {
            skipSpace()
            guard next == UInt8(ascii: "\"") else { throw .malformed }
            let key = try string()
            guard keys.insert(key).inserted else { throw .duplicateKey(key) }
            skipSpace()
            guard next == UInt8(ascii: ":") else { throw .malformed }
            index += 1
            skipSpace()
            try value(depth: depth)
            if try closes(with: UInt8(ascii: "}")) { return }
        }
    }

    private mutating func array(depth: Int) throws(Problem) {
        index += 1
        skipSpace()
        if next == UInt8(ascii: "]") {
            index += 1
            return
        }
        while true {
            skipSpace()
            try value(depth: depth)
            if try closes(with: UInt8(ascii: "]")) { return }
        }
    }

    /// After a member or element: a comma (false, another follows) or `close` (true, done).
    private mutating func closes(with close: UInt8) throws(Problem) -> Bool {
        skipSpace()
        if next == UInt8(ascii: ",") {
            index += 1
            return false
        }
        guard next == close else { throw .malformed }
        index += 1
        return true
    }

    /// A string with its escapes resolved (so `"\u0065mail"` is `email`).
    private mutating func string() throws(Problem) -> String {
        index += 1
        var scalars = String.UnicodeScalarView()
        var raw: [UInt8] = []
        func flush() {
            scalars.append(contentsOf: String(decoding: raw, as: UTF8.self).unicodeScalars)
            raw.removeAll(keepingCapacity: true)
        }
        while index < bytes.count {
            let byte = bytes[index]
            index += 1
            switch byte {
            case UInt8(ascii: "\""):
                flush()
                return String(scalars)
            case UInt8(ascii: "\\"):
                guard index < bytes.count else { throw .malformed }
                let escape = bytes[index]
                index += 1
                flush()
                switch escape {
                case UInt8(ascii: "u"):
                    var code = try hex4()
                    if (0xD800..<0xDC00).contains(code), index + 1 < bytes.count, bytes[index] == UInt8(ascii: "\\"),
                        bytes[index + 1] == UInt8(ascii: "u")
                    {
                        index += 2
                        let low = try hex4()
                        code = 0x10000 + ((code - 0xD800) << 10) + (low &- 0xDC00)
                    }
                    scalars.append(Unicode.Scalar(code) ?? "\u{FFFD}")
                case UInt8(ascii: "n"): scalars.append("\n")
                case UInt8(ascii: "t"): scalars.append("\t")
                case UInt8(ascii: "r"): scalars.append("\r")
                case UInt8(ascii: "b"): scalars.append("\u{08}")
                case UInt8(ascii: "f"): scalars.append("\u{0C}")
                default: scalars.append(Unicode.Scalar(escape))
                }
            default:
                raw.append(byte)
            }
        }
        throw .malformed
    }

    private mutating func hex4() throws(Problem) -> UInt32 {
        guard index + 4 <= bytes.count, let value = UInt32(String(decoding: bytes[index..<index + 4], as: UTF8.self), radix: 16) else {
            throw .malformed
        }
        index += 4
        return value
    }

    /// A number, `true`, `false` or `null`: checked by the decoder; here only skipped.
    private mutating func scalar() throws(Problem) {
        let start = index
        while index < bytes.count, !Self.delimiters.contains(bytes[index]) { index += 1 }
        if index == start { throw .malformed }
    }

    private static let delimiters: Set<UInt8> = Set(",]} \t\r\n:".utf8)

    private var next: UInt8? { index < bytes.count ? bytes[index] : nil }

    private mutating func skipSpace() {
        while index < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[index]) { index += 1 }
    }
}
