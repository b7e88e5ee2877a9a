import Foundation

/// Reads a request body's JSON once, before anything decodes it: nesting no deeper than
/// `maximumDepth` (a deeply nested body must not cost stack or time), and no object that names a
/// key twice (`{"email": "a", "email": "b"}`, or the same through a `\u` escape), which JSON
/// parsers disagree about and which could make two components read different values.
///
/// The walk also keeps what it read (``Node``), so a body type that reads itself
/// (``JSONReadable``) needs no second pass. The walk is lenient where `JSONDecoder` is strict
/// (a bare word, a control character in a string): such a document is not ``Reading/certain``,
/// and only `JSONDecoder` answers for it.
package struct JSONShape {
    static let maximumDepth = 32

    package enum Problem: Error, Equatable {
        case duplicateKey(String)
        case tooDeep
        /// Not JSON at all; the decoder says where.
        case malformed
    }

    /// A value as the walk read it. Numbers are kept only as whole numbers written plainly
    /// (`-?(0|[1-9][0-9]*)`, within `Int`): every other number is `otherNumber`, and what it
    /// decodes to is `JSONDecoder`'s to say.
    package enum Node: Sendable {
        case object(Members)
        case array([Node])
        case string(String)
        case integer(Int)
        case otherNumber
        case bool(Bool)
        case null
    }

    /// An object's members, in the order the body gave them (no key twice).
    package struct Members: Sendable {
        package let pairs: [(key: String, value: Node)]

        package init(_ pairs: [(key: String, value: Node)]) { self.pairs = pairs }

        /// The member named `key`, or nil when there is none.
        package subscript(key: String) -> Node? {
            for pair in pairs where pair.key == key { return pair.value }
            return nil
        }
    }

    /// A whole body read: its value, and whether `JSONDecoder` is sure to read it the same way.
    package struct Reading: Sendable {
        package let root: Node
        /// False when the walk let something pass that strict JSON does not allow.
        package let certain: Bool

        /// The top-level object, when the body is one and is certain.
        package var object: Members? {
            guard certain, case .object(let members) = root else { return nil }
            return members
        }
    }

    /// Objects with more members than this look their keys up in a set, not one by one.
    private static let linearKeys = 16

    private let bytes: UnsafeRawBufferPointer
    /// Whether the values are kept (a reader will take them), or only each object's keys, as
    /// long as the object is walked (the decoder will read the body).
    private let keepsValues: Bool
    private var index = 0
    private var certain = true

    private init(_ bytes: UnsafeRawBufferPointer, keepsValues: Bool) {
        self.bytes = bytes
        self.keepsValues = keepsValues
    }

    /// The first problem in `data`, or nil when its shape is fine.
    static func problem(in data: Data) -> Problem? {
        guard case .failure(let problem) = data.withUnsafeBytes({ read(bytes: $0, keepingValues: false) }) else { return nil }
        return problem
    }

    /// `bytes` read whole, or the first problem in them. Without `keepingValues`, the reading's
    /// values are only placeholders: the shape is checked all the same.
    package static func read(bytes: UnsafeRawBufferPointer, keepingValues: Bool) -> Result<Reading, Problem> {
        var walker = JSONShape(bytes, keepsValues: keepingValues)
        do throws(Problem) {
            walker.skipSpace()
            let root = try walker.value(depth: 0)
            walker.skipSpace()
            guard walker.index == bytes.count else { return .failure(.malformed) }
            return .success(Reading(root: root, certain: walker.certain))
        } catch {
            return .failure(error)
        }
    }

    private mutating func value(depth: Int) throws(Problem) -> Node {
        guard depth < Self.maximumDepth else { throw .tooDeep }
        guard index < bytes.count else { throw .malformed }
        switch bytes[index] {
        case UInt8(ascii: "{"): return try object(depth: depth + 1)
        case UInt8(ascii: "["): return try array(depth: depth + 1)
        case UInt8(ascii: "\""): return .string(try string())
        default: return try scalar()
        }
    }

    private mutating func object(depth: Int) throws(Problem) -> Node {
        index += 1
        var pairs: [(key: String, value: Node)] = []
        var keys: Set<String>?
        skipSpace()
        if next == UInt8(ascii: "}") {
            index += 1
            return .object(Members(pairs))
        }
        while true {
            skipSpace()
            guard next == UInt8(ascii: "\"") else { throw .malformed }
            let key = try string()
            if pairs.count < Self.linearKeys {
                if pairs.contains(where: { $0.key == key }) { throw .duplicateKey(key) }
            } else {
                if keys == nil { keys = Set(pairs.map(\.key)) }
                guard keys!.insert(key).inserted else { throw .duplicateKey(key) }
            }
            skipSpace()
            guard next == UInt8(ascii: ":") else { throw .malformed }
            index += 1
            skipSpace()
            let node = try value(depth: depth)
            pairs.append((key, keepsValues ? node : .null))
            if try closes(with: UInt8(ascii: "}")) { return .object(Members(pairs)) }
        }
    }

    private mutating func array(depth: Int) throws(Problem) -> Node {
        index += 1
        var elements: [Node] = []
        skipSpace()
        if next == UInt8(ascii: "]") {
            index += 1
            return .array(elements)
        }
        while true {
            skipSpace()
            let node = try value(depth: depth)
            if keepsValues { elements.append(node) }
            if try closes(with: UInt8(ascii: "]")) { return .array(elements) }
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
        var start = index
        func flush(upTo end: Int) {
            guard end > start else { return }
            scalars.append(contentsOf: text(start..<end).unicodeScalars)
        }
        while index < bytes.count {
            let byte = bytes[index]
            switch byte {
            case UInt8(ascii: "\""):
                let end = index
                index += 1
                // Most strings have no escape: one conversion, no scalar view.
                if scalars.isEmpty { return text(start..<end) }
                flush(upTo: end)
                return String(scalars)
            case UInt8(ascii: "\\"):
                flush(upTo: index)
                index += 1
                guard index < bytes.count else { throw .malformed }
                let escape = bytes[index]
                index += 1
                scalars.append(try unescaped(escape))
                start = index
            default:
                if byte < 0x20 { certain = false }
                index += 1
            }
        }
        throw .malformed
    }

    /// The bytes in `range` as text; bytes that are not UTF-8 become U+FFFD, and the document
    /// is then not certain (`JSONDecoder` may refuse them).
    private mutating func text(_ range: Range<Int>) -> String {
        let slice = UnsafeRawBufferPointer(rebasing: bytes[range])
        if let valid = String(validating: slice, as: UTF8.self) { return valid }
        certain = false
        return String(decoding: slice, as: UTF8.self)
    }

    /// The character an escape stands for, after its backslash and `escape`.
    private mutating func unescaped(_ escape: UInt8) throws(Problem) -> Unicode.Scalar {
        switch escape {
        case UInt8(ascii: "u"):
            var code = try hex4()
            // A high surrogate takes the escape after it only when that is a low one; any other
            // is read as an escape of its own.
            if (0xD800..<0xDC00).contains(code), index + 1 < bytes.count, bytes[index] == UInt8(ascii: "\\"),
                bytes[index + 1] == UInt8(ascii: "u"), let low = hex4(at: index + 2), (0xDC00..<0xE000).contains(low)
            {
                index += 6
                code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)
            }
            guard let scalar = Unicode.Scalar(code) else {
                certain = false
                return "\u{FFFD}"
            }
            return scalar
        case UInt8(ascii: "n"): return "\n"
        case UInt8(ascii: "t"): return "\t"
        case UInt8(ascii: "r"): return "\r"
        case UInt8(ascii: "b"): return "\u{08}"
        case UInt8(ascii: "f"): return "\u{0C}"
        case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): return Unicode.Scalar(escape)
        default:
            certain = false
            return Unicode.Scalar(escape)
        }
    }

    private mutating func hex4() throws(Problem) -> UInt32 {
        guard let value = hex4(at: index) else { throw .malformed }
        index += 4
        return value
    }

    /// The four hex digits at `at`, or nil when there are not four there.
    private func hex4(at: Int) -> UInt32? {
        guard at + 4 <= bytes.count else { return nil }
        var value: UInt32 = 0
        for byte in bytes[at..<at + 4] {
            guard let digit = Self.hexDigit(byte) else { return nil }
            value = value << 4 | digit
        }
        return value
    }

    private static func hexDigit(_ byte: UInt8) -> UInt32? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): UInt32(byte - UInt8(ascii: "0"))
        case UInt8(ascii: "a")...UInt8(ascii: "f"): UInt32(byte - UInt8(ascii: "a") + 10)
        case UInt8(ascii: "A")...UInt8(ascii: "F"): UInt32(byte - UInt8(ascii: "A") + 10)
        default: nil
        }
    }

    /// A number, `true`, `false` or `null`, up to the next delimiter. Anything else there is
    /// skipped and leaves the document uncertain: the decoder says what is wrong with it.
    private mutating func scalar() throws(Problem) -> Node {
        let start = index
        while index < bytes.count, !Self.isDelimiter(bytes[index]) { index += 1 }
        if index == start { throw .malformed }
        let token = UnsafeRawBufferPointer(rebasing: bytes[start..<index])
        if token.elementsEqual("true".utf8) { return .bool(true) }
        if token.elementsEqual("false".utf8) { return .bool(false) }
        if token.elementsEqual("null".utf8) { return .null }
        if let node = Self.number(token) { return node }
        certain = false
        return .otherNumber
    }

    /// `token` as a JSON number (RFC 8259 §6), or nil when it is not one.
    private static func number(_ token: UnsafeRawBufferPointer) -> Node? {
        var at = 0
        func digits() -> Int {
            let from = at
            while at < token.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(token[at]) { at += 1 }
            return at - from
        }
        let negative = token.first == UInt8(ascii: "-")
        if negative { at += 1 }
        let integerStart = at
        let integerDigits = digits()
        guard integerDigits > 0, token[integerStart] != UInt8(ascii: "0") || integerDigits == 1 else { return nil }
        var plain = true
        if at < token.count, token[at] == UInt8(ascii: ".") {
            at += 1
            guard digits() > 0 else { return nil }
            plain = false
        }
        if at < token.count, token[at] | 0x20 == UInt8(ascii: "e") {
            at += 1
            if at < token.count, token[at] == UInt8(ascii: "+") || token[at] == UInt8(ascii: "-") { at += 1 }
            guard digits() > 0 else { return nil }
            plain = false
        }
        guard at == token.count else { return nil }
        // `-0` is left to the decoder with the fractions and exponents.
        guard plain, !(negative && token[integerStart] == UInt8(ascii: "0")) else { return .otherNumber }
        var value = 0
        for byte in token[integerStart...] {
            let digit = Int(byte - UInt8(ascii: "0"))
            let (times, overflowA) = value.multipliedReportingOverflow(by: 10)
            let (sum, overflowB) = negative ? times.subtractingReportingOverflow(digit) : times.addingReportingOverflow(digit)
            if overflowA || overflowB { return .otherNumber }
            value = sum
        }
        return .integer(value)
    }

    private static func isDelimiter(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: ","), UInt8(ascii: "]"), UInt8(ascii: "}"), UInt8(ascii: ":"): true
        default: isSpace(byte)
        }
    }

    private static func isSpace(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D
    }

    private var next: UInt8? { index < bytes.count ? bytes[index] : nil }

    private mutating func skipSpace() {
        while index < bytes.count, Self.isSpace(bytes[index]) { index += 1 }
    }
}
