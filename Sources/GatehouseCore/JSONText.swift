import Foundation

/// JSON written by hand as Foundation's `JSONEncoder` writes it with
/// `[.sortedKeys, .withoutEscapingSlashes]`: strings escaped as it escapes them, keys in its order
/// (by their UTF-8 bytes). The server's answers (`CompactJSON`, `DirectJSON`) and the store's flat
/// string maps (an audit row's details, an event's data) are written through here; their tests
/// hold the bytes to `JSONEncoder`'s.
public enum JSONText {
    /// Whether key `a` sorts before `b` as JSONEncoder's `.sortedKeys` orders them: by their UTF-8
    /// bytes.
    public static func precedes(_ a: String, _ b: String) -> Bool {
        // Both strings' bytes where they are: a native string's, borrowed (no copy, so no retain
        // and release of its storage at each of a sort's comparisons, issue 61 step 19).
        if let order = a.utf8.withContiguousStorageIfAvailable({ x in b.utf8.withContiguousStorageIfAvailable { y in precedes(x, y) } }),
            let order
        {
            return order
        }
        // A bridged or foreign string: made native first.
        var (a, b) = (a, b)
        return a.withUTF8 { x in b.withUTF8 { y in precedes(x, y) } }
    }

    private static func precedes(_ x: UnsafeBufferPointer<UInt8>, _ y: UnsafeBufferPointer<UInt8>) -> Bool {
        let common = min(x.count, y.count)
        let order = common == 0 ? 0 : memcmp(x.baseAddress!, y.baseAddress!, common)
        return order != 0 ? order < 0 : x.count < y.count
    }

    /// `"` + the text, with `"`, `\` and the control characters escaped as JSONEncoder does
    /// (slashes not: `.withoutEscapingSlashes`).
    public static func writeString(_ text: String, into out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        var text = text
        let plain = text.withUTF8 { utf8 in
            guard !utf8.contains(where: { $0 < 0x20 || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") }) else { return false }
            out.append(contentsOf: utf8)
            return true
        }
        guard !plain else {
            out.append(UInt8(ascii: "\""))
            return
        }
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
                out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0")])
                out.append(Hex.digit(byte >> 4))
                out.append(Hex.digit(byte & 0xF))
            default: out.append(byte)
            }
        }
        out.append(UInt8(ascii: "\""))
    }

    /// A map of strings as one JSON object, its keys sorted: what `JSONEncoder` writes for it.
    /// Foundation's `JSONSerialization` wrote these rows before; it took about a tenth of a
    /// millisecond a login, on the SQLite writer's thread (BENCHMARKS.md, issue 61 step 17).
    public static func object(_ members: [String: String]) -> String {
        var out: [UInt8] = [UInt8(ascii: "{")]
        for (index, member) in members.sorted(by: { precedes($0.key, $1.key) }).enumerated() {
            if index > 0 { out.append(UInt8(ascii: ",")) }
            writeString(member.key, into: &out)
            out.append(UInt8(ascii: ":"))
            writeString(member.value, into: &out)
        }
        out.append(UInt8(ascii: "}"))
        return String(decoding: out, as: UTF8.self)
    }
}
