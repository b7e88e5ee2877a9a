import GatehouseCore
import GatehouseWire

/// An answer written straight into its bytes, member by member in the order JSONEncoder's
/// `.sortedKeys` gives them, with none of `Encoder`'s machinery: no containers boxed, no keys
/// collected and sorted, no generic look-ups at run time. For the answers of the reads an app
/// makes most (`GET /v1/me`, `POST /v1/entitlements/check`), and of every sign-in and refresh
/// (`AuthResponse`, `SessionResponse` and their kin): written through `Encoder` and
/// `CompactJSON`'s tree, a `/v1/me` answer was 43 µs of the request's 296 (BENCHMARKS.md, issue
/// 61, step 14). The bytes are `CompactJSON`'s, so JSONEncoder's: `DirectJSONTests` holds every
/// conforming type to them over values with every member set.
package protocol DirectJSON: Encodable, JSONWritable {}

/// A value `JSONWriter` writes: the scalars, arrays, string-keyed dictionaries and optionals of
/// them, and each `DirectJSON` type (which writes itself with `JSONWriter.object`).
package protocol JSONWritable {
    func write(to json: inout JSONWriter) throws
}

package struct JSONWriter {
    private(set) var bytes: [UInt8] = []
    /// Whether the object being written has no member yet.
    private var atFirstMember = true

    init() { bytes.reserveCapacity(1024) }

    /// An object whose members `body` writes with `member`, in sorted order.
    mutating func object(_ body: (inout JSONWriter) throws -> Void) rethrows {
        bytes.append(UInt8(ascii: "{"))
        let outerFirst = atFirstMember
        atFirstMember = true
        try body(&self)
        atFirstMember = outerFirst
        bytes.append(UInt8(ascii: "}"))
    }

    /// One member of the object being written. `key` is plain ASCII (nothing to escape) and sorts
    /// after the member before it, by bytes, as `.sortedKeys` orders them (`DirectJSONTests`
    /// compares every writer's bytes with `Encoder`'s, so a key out of order fails there).
    mutating func member(_ key: StaticString, _ value: some JSONWritable) throws {
        if !atFirstMember { bytes.append(UInt8(ascii: ",")) }
        atFirstMember = false
        bytes.append(UInt8(ascii: "\""))
        bytes.append(contentsOf: UnsafeBufferPointer(start: key.utf8Start, count: key.utf8CodeUnitCount))
        bytes.append(contentsOf: [UInt8(ascii: "\""), UInt8(ascii: ":")])
        try value.write(to: &self)
    }

    /// A member left out when `value` is nil, as a synthesised `encode(to:)` leaves it out
    /// (`encodeIfPresent`).
    mutating func member(_ key: StaticString, ifPresent value: (some JSONWritable)?) throws {
        if let value { try member(key, value) }
    }

    mutating func literal(_ text: StaticString) {
        bytes.append(contentsOf: UnsafeBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
    }

    mutating func string(_ text: String) { JSONText.writeString(text, into: &bytes) }

    mutating func integer(_ value: some BinaryInteger) { bytes.append(contentsOf: String(value).utf8) }

    mutating func number(_ value: Double) throws { try CompactJSON.writeNumber(value, into: &bytes) }

    /// `[` the items `,` `]`.
    mutating func array<C: Collection>(_ items: C) throws where C.Element: JSONWritable {
        bytes.append(UInt8(ascii: "["))
        var first = true
        for item in items {
            if !first { bytes.append(UInt8(ascii: ",")) }
            first = false
            try item.write(to: &self)
        }
        bytes.append(UInt8(ascii: "]"))
    }

    /// A dictionary as an object, its keys sorted as `.sortedKeys` sorts them.
    mutating func dictionary<V: JSONWritable>(_ members: [String: V]) throws {
        bytes.append(UInt8(ascii: "{"))
        var first = true
        for key in members.keys.sorted(by: JSONText.precedes) {
            if !first { bytes.append(UInt8(ascii: ",")) }
            first = false
            JSONText.writeString(key, into: &bytes)
            bytes.append(UInt8(ascii: ":"))
            try members[key]!.write(to: &self)
        }
        bytes.append(UInt8(ascii: "}"))
    }
}

extension String: JSONWritable {
    package func write(to json: inout JSONWriter) { json.string(self) }
}

extension Bool: JSONWritable {
    package func write(to json: inout JSONWriter) { json.literal(self ? "true" : "false") }
}

extension Int: JSONWritable {
    package func write(to json: inout JSONWriter) { json.integer(self) }
}

extension Int64: JSONWritable {
    package func write(to json: inout JSONWriter) { json.integer(self) }
}

extension Optional: JSONWritable where Wrapped: JSONWritable {
    package func write(to json: inout JSONWriter) throws {
        if let value = self { try value.write(to: &json) } else { json.literal("null") }
    }
}

extension Array: JSONWritable where Element: JSONWritable {
    package func write(to json: inout JSONWriter) throws { try json.array(self) }
}

extension Dictionary: JSONWritable where Key == String, Value: JSONWritable {
    package func write(to json: inout JSONWriter) throws { try json.dictionary(self) }
}

extension JSONValue: JSONWritable {
    /// As `JSONValue.encode(to:)`: a whole number as an integer (`wholeNumber`).
    package func write(to json: inout JSONWriter) throws {
        switch self {
        case .null: json.literal("null")
        case .bool(let value): value.write(to: &json)
        case .number(let value):
            if let whole = JSONValue.wholeNumber(value) {
                json.integer(whole)
            } else {
                try json.number(value)
            }
        case .string(let value): json.string(value)
        case .array(let value): try json.array(value)
        case .object(let value): try json.dictionary(value)
        }
    }
}

extension PlanState: JSONWritable {
    package func write(to json: inout JSONWriter) { json.string(rawValue) }
}

extension Provider: JSONWritable {
    package func write(to json: inout JSONWriter) { json.string(rawValue) }
}

extension CompactJSON {
    /// `value`'s bytes, written by itself (`DirectJSON`).
    package static func encode(_ value: some DirectJSON) throws -> [UInt8] {
        var json = JSONWriter()
        try value.write(to: &json)
        return json.bytes
    }
}
