import Foundation
import GatehouseCore

/// Writes an `Encodable` value as the same bytes Foundation's `JSONEncoder` gives with
/// `[.sortedKeys, .withoutEscapingSlashes]` and its default strategies for dates, data, URLs and
/// decimals, with less machinery: no boxed values, no dynamic casts for every scalar, keys
/// compared as bytes. Every JSON answer goes through it (`JSONBody`, `EncodedDocument`);
/// `CompactJSONTests` holds its output to `JSONEncoder`'s, byte for byte (issue 47: Foundation's
/// encoder led the profile of the signed-in reads).
///
/// The value is built in one `Tree` of flat arrays, then written with each object's keys sorted
/// (issue 61: with the arrays' exclusivity checks off, keys compared with `memcmp` and plain
/// strings copied whole, a `/v1/me` answer takes about 29 % less time than through a tree of
/// objects; `gatehouse-bench micro`'s `encode_me_us`).
package enum CompactJSON {
    /// How a `Date` is written: JSONEncoder's `dateEncodingStrategy`, of the two in use.
    package enum Dates: Sendable {
        /// `deferredToDate`, JSONEncoder's default: seconds since 2001, as a `Double`.
        case deferredToDate
        /// `secondsSince1970`: a JSON Web Token's NumericDate (`JWTEncoder`).
        case secondsSince1970
    }

    package static func encode(_ value: some Encodable, dates: Dates = .deferredToDate) throws -> [UInt8] {
        let tree = Tree(dates: dates)
        try tree.encode(value, at: Tree.root)
        var out: [UInt8] = []
        out.reserveCapacity(tree.bytes.count + 16 * tree.links.count + 16)
        try tree.write(Tree.root, into: &out)
        return out
    }

    /// A JSON value as it is being built. Containers stay open until the whole value is written,
    /// since `Encoder` lets a container be filled after its parent has moved on: a container is
    /// a node's index, and everything it holds is found from there.
    /// - `nodes`: one per value; a scalar is a range of `bytes`, an object or an array the first
    ///   and last of its `links`.
    /// - `links`: an object's members (with their keys) and an array's items, each pointing at the
    ///   next of its container.
    final class Tree {
        enum Kind: UInt8 { case unset, scalar, object, array }

        struct Node {
            var kind: Kind = .unset
            /// A scalar's bytes (`start..<end`); an object's or array's first and last link (-1: none).
            var start = -1
            var end = -1
            /// An array's items.
            var count = 0
        }

        struct Link {
            /// The member's key; "" for an array's item.
            var key: String
            var node: Int
            var next: Int
        }

        static let root = 0
        // One tree is used by one encoding on one thread, and no access to these arrays overlaps
        // another: the run-time exclusivity checks were an eighth of an encoding's time.
        @exclusivity(unchecked) var nodes: [Node] = [Node()]
        @exclusivity(unchecked) var links: [Link] = []
        @exclusivity(unchecked) var bytes: [UInt8] = []

        let dates: Dates

        init(dates: Dates) {
            self.dates = dates
            nodes.reserveCapacity(64)
            links.reserveCapacity(64)
            bytes.reserveCapacity(1024)
        }

        /// Makes `node` a scalar of what `body` appends.
        func set(_ node: Int, _ body: (inout [UInt8]) throws -> Void) rethrows {
            let start = bytes.count
            try body(&bytes)
            nodes[node] = Node(kind: .scalar, start: start, end: bytes.count)
        }

        func setLiteral(_ node: Int, _ text: StaticString) {
            set(node) { $0.append(contentsOf: UnsafeBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount)) }
        }

        func setInteger(_ node: Int, _ value: some BinaryInteger) {
            set(node) { $0.append(contentsOf: String(value).utf8) }
        }

        func setString(_ node: Int, _ value: String) {
            set(node) { JSONText.writeString(value, into: &$0) }
        }

        func setNumber<F: BinaryFloatingPoint & LosslessStringConvertible>(_ node: Int, _ value: F) throws {
            try set(node) { try CompactJSON.writeNumber(value, into: &$0) }
        }

        /// `node` as an object (an empty one if it was anything else).
        func object(_ node: Int) -> Int {
            if nodes[node].kind != .object { nodes[node] = Node(kind: .object) }
            return node
        }

        /// `node` as an array (an empty one if it was anything else).
        func array(_ node: Int) -> Int {
            if nodes[node].kind != .array { nodes[node] = Node(kind: .array) }
            return node
        }

        /// The value of `key` in the object `object`: a key encoded again replaces its value, as
        /// in JSONEncoder.
        func member(_ object: Int, _ key: String) -> Int {
            var link = nodes[object].start
            while link >= 0 {
                if links[link].key == key { return links[link].node }
                link = links[link].next
            }
            return append(to: object, key: key)
        }

        /// A new item at the end of the array `array`.
        func item(_ array: Int) -> Int {
            nodes[array].count += 1
            return append(to: array, key: "")
        }

        private func append(to container: Int, key: String) -> Int {
            let node = nodes.count
            nodes.append(Node())
            let link = links.count
            links.append(Link(key: key, node: node, next: -1))
            if nodes[container].end >= 0 {
                links[nodes[container].end].next = link
            } else {
                nodes[container].start = link
            }
            nodes[container].end = link
            return node
        }

        func encode<T: Encodable>(_ value: T, at node: Int) throws {
            // The types JSONEncoder writes in its own way rather than through their `encode(to:)`.
            // `T.self` is checked first, so each cast is to the type the value has.
            if T.self == String.self {
                setString(node, unsafeBitCast(value, to: String.self))
            } else if T.self == Bool.self {
                setLiteral(node, unsafeBitCast(value, to: Bool.self) ? "true" : "false")
            } else if T.self == Int.self {
                setInteger(node, unsafeBitCast(value, to: Int.self))
            } else if T.self == URL.self {
                setString(node, (value as! URL).absoluteString)
            } else if T.self == Data.self {
                setString(node, (value as! Data).base64EncodedString())
            } else if T.self == Decimal.self {
                set(node) { $0.append(contentsOf: (value as! Decimal).description.utf8) }
            } else if T.self == Date.self {
                let date = value as! Date
                switch dates {
                case .deferredToDate: try setNumber(node, date.timeIntervalSinceReferenceDate)
                case .secondsSince1970: try setNumber(node, date.timeIntervalSince1970)
                }
            } else {
                try value.encode(to: TreeEncoder(tree: self, node: node, codingPath: []))
            }
        }

        func write(_ node: Int, into out: inout [UInt8]) throws {
            let current = nodes[node]
            switch current.kind {
            case .scalar:
                bytes.withUnsafeBufferPointer { out.append(contentsOf: $0[current.start..<current.end]) }
            case .object:
                var members: [(key: String, node: Int)] = []
                var link = current.start
                while link >= 0 {
                    members.append((links[link].key, links[link].node))
                    link = links[link].next
                }
                // Codable's keys come in the type's order: sorted only when they are not already.
                let precedes: ((key: String, node: Int), (key: String, node: Int)) -> Bool = { JSONText.precedes($0.key, $1.key) }
                if zip(members, members.dropFirst()).contains(where: { !precedes($0, $1) }) { members.sort(by: precedes) }
                out.append(UInt8(ascii: "{"))
                for (index, member) in members.enumerated() {
                    if index > 0 { out.append(UInt8(ascii: ",")) }
                    JSONText.writeString(member.key, into: &out)
                    out.append(UInt8(ascii: ":"))
                    try write(member.node, into: &out)
                }
                out.append(UInt8(ascii: "}"))
            case .array:
                out.append(UInt8(ascii: "["))
                var link = current.start
                while link >= 0 {
                    if link != current.start { out.append(UInt8(ascii: ",")) }
                    try write(links[link].node, into: &out)
                    link = links[link].next
                }
                out.append(UInt8(ascii: "]"))
            case .unset:
                // JSONEncoder refuses a value that encoded nothing at the top; nested, `{}`.
                out.append(contentsOf: [UInt8(ascii: "{"), UInt8(ascii: "}")])
            }
        }
    }

    /// A floating-point number as JSONEncoder writes it: its shortest description, without a
    /// trailing `.0`; infinity and NaN refused.
    static func writeNumber<F: BinaryFloatingPoint & LosslessStringConvertible>(_ value: F, into out: inout [UInt8]) throws {
        guard value.isFinite else {
            throw EncodingError.invalidValue(value, .init(codingPath: [], debugDescription: "Unable to encode \(value) directly in JSON."))
        }
        var text = value.description
        if text.hasSuffix(".0") { text.removeLast(2) }
        out.append(contentsOf: text.utf8)
    }
}

/// The `Encoder` a value's `encode(to:)` is given: everything it writes lands in `node`.
private struct TreeEncoder: Encoder {
    let tree: CompactJSON.Tree
    let node: Int
    let codingPath: [any CodingKey]
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        KeyedEncodingContainer(KeyedTree<Key>(tree: tree, object: tree.object(node), codingPath: codingPath))
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        UnkeyedTree(tree: tree, array: tree.array(node), codingPath: codingPath)
    }

    func singleValueContainer() -> any SingleValueEncodingContainer {
        SingleTree(tree: tree, node: node, codingPath: codingPath)
    }
}

private struct KeyedTree<Key: CodingKey>: KeyedEncodingContainerProtocol {
    let tree: CompactJSON.Tree
    let object: Int
    let codingPath: [any CodingKey]

    private func at(_ key: Key) -> Int { tree.member(object, key.stringValue) }

    func encodeNil(forKey key: Key) throws { tree.setLiteral(at(key), "null") }
    func encode(_ value: Bool, forKey key: Key) throws { tree.setLiteral(at(key), value ? "true" : "false") }
    func encode(_ value: String, forKey key: Key) throws { tree.setString(at(key), value) }
    func encode(_ value: Double, forKey key: Key) throws { try tree.setNumber(at(key), value) }
    func encode(_ value: Float, forKey key: Key) throws { try tree.setNumber(at(key), value) }
    func encode(_ value: Int, forKey key: Key) throws { tree.setInteger(at(key), value) }
    func encode(_ value: Int8, forKey key: Key) throws { tree.setInteger(at(key), value) }
    func encode(_ value: Int16, forKey key: Key) throws { tree.setInteger(at(key), value) }
    func encode(_ value: Int32, forKey key: Key) throws { tree.setInteger(at(key), value) }
    func encode(_ value: Int64, forKey key: Key) throws { tree.setInteger(at(key), value) }
    func encode(_ value: UInt, forKey key: Key) throws { tree.setInteger(at(key), value) }
    func encode(_ value: UInt8, forKey key: Key) throws { tree.setInteger(at(key), value) }
    func encode(_ value: UInt16, forKey key: Key) throws { tree.setInteger(at(key), value) }
    func encode(_ value: UInt32, forKey key: Key) throws { tree.setInteger(at(key), value) }
    func encode(_ value: UInt64, forKey key: Key) throws { tree.setInteger(at(key), value) }
    func encode<T: Encodable>(_ value: T, forKey key: Key) throws { try tree.encode(value, at: at(key)) }

    func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type, forKey key: Key) -> KeyedEncodingContainer<NestedKey> {
        KeyedEncodingContainer(KeyedTree<NestedKey>(tree: tree, object: tree.object(at(key)), codingPath: codingPath + [key]))
    }

    func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
        UnkeyedTree(tree: tree, array: tree.array(at(key)), codingPath: codingPath + [key])
    }

    func superEncoder() -> any Encoder { TreeEncoder(tree: tree, node: tree.member(object, "super"), codingPath: codingPath) }
    func superEncoder(forKey key: Key) -> any Encoder { TreeEncoder(tree: tree, node: at(key), codingPath: codingPath + [key]) }
}

private struct UnkeyedTree: UnkeyedEncodingContainer {
    let tree: CompactJSON.Tree
    let array: Int
    let codingPath: [any CodingKey]
    var count: Int { tree.nodes[array].count }

    func encodeNil() throws { tree.setLiteral(tree.item(array), "null") }
    func encode(_ value: Bool) throws { tree.setLiteral(tree.item(array), value ? "true" : "false") }
    func encode(_ value: String) throws { tree.setString(tree.item(array), value) }
    func encode(_ value: Double) throws { try tree.setNumber(tree.item(array), value) }
    func encode(_ value: Float) throws { try tree.setNumber(tree.item(array), value) }
    func encode(_ value: Int) throws { tree.setInteger(tree.item(array), value) }
    func encode(_ value: Int8) throws { tree.setInteger(tree.item(array), value) }
    func encode(_ value: Int16) throws { tree.setInteger(tree.item(array), value) }
    func encode(_ value: Int32) throws { tree.setInteger(tree.item(array), value) }
    func encode(_ value: Int64) throws { tree.setInteger(tree.item(array), value) }
    func encode(_ value: UInt) throws { tree.setInteger(tree.item(array), value) }
    func encode(_ value: UInt8) throws { tree.setInteger(tree.item(array), value) }
    func encode(_ value: UInt16) throws { tree.setInteger(tree.item(array), value) }
    func encode(_ value: UInt32) throws { tree.setInteger(tree.item(array), value) }
    func encode(_ value: UInt64) throws { tree.setInteger(tree.item(array), value) }
    func encode<T: Encodable>(_ value: T) throws { try tree.encode(value, at: tree.item(array)) }

    func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type) -> KeyedEncodingContainer<NestedKey> {
        KeyedEncodingContainer(KeyedTree<NestedKey>(tree: tree, object: tree.object(tree.item(array)), codingPath: codingPath))
    }

    func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
        UnkeyedTree(tree: tree, array: tree.array(tree.item(array)), codingPath: codingPath)
    }

    func superEncoder() -> any Encoder { TreeEncoder(tree: tree, node: tree.item(array), codingPath: codingPath) }
}

private struct SingleTree: SingleValueEncodingContainer {
    let tree: CompactJSON.Tree
    let node: Int
    let codingPath: [any CodingKey]

    func encodeNil() throws { tree.setLiteral(node, "null") }
    func encode(_ value: Bool) throws { tree.setLiteral(node, value ? "true" : "false") }
    func encode(_ value: String) throws { tree.setString(node, value) }
    func encode(_ value: Double) throws { try tree.setNumber(node, value) }
    func encode(_ value: Float) throws { try tree.setNumber(node, value) }
    func encode(_ value: Int) throws { tree.setInteger(node, value) }
    func encode(_ value: Int8) throws { tree.setInteger(node, value) }
    func encode(_ value: Int16) throws { tree.setInteger(node, value) }
    func encode(_ value: Int32) throws { tree.setInteger(node, value) }
    func encode(_ value: Int64) throws { tree.setInteger(node, value) }
    func encode(_ value: UInt) throws { tree.setInteger(node, value) }
    func encode(_ value: UInt8) throws { tree.setInteger(node, value) }
    func encode(_ value: UInt16) throws { tree.setInteger(node, value) }
    func encode(_ value: UInt32) throws { tree.setInteger(node, value) }
    func encode(_ value: UInt64) throws { tree.setInteger(node, value) }
    func encode<T: Encodable>(_ value: T) throws { try tree.encode(value, at: node) }
}
