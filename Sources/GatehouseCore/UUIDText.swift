import Foundation

/// A UUID to and from its 36 characters (8-4-4-4-12 hex digits) by arithmetic. Foundation's
/// `UUID(uuidString:)` parses with `sscanf` and `uuidString` writes with `sprintf`: with the
/// `lowercased()` after it, 3.4 to 3.9 µs of a signed-in request, whose token names its user
/// and session (BENCHMARKS.md, issue 61 step 13).
public enum UUIDText {
    /// The UUID `string` spells, hex digits of either case; nil for anything else, so also for
    /// what `sscanf` lets through in a UUID's place (a space, a tab, a sign).
    static func parse(_ string: String) -> UUID? {
        var string = string
        return string.withUTF8 { text -> UUID? in
            guard text.count == 36 else { return nil }
            var bytes: uuid_t = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
            let parsed = withUnsafeMutableBytes(of: &bytes) { out -> Bool in
                var at = 0
                for index in 0..<16 {
                    if dashBefore(index) {
                        guard text[at] == UInt8(ascii: "-") else { return false }
                        at += 1
                    }
                    guard let high = Hex.value(text[at]), let low = Hex.value(text[at + 1]) else { return false }
                    out[index] = high << 4 | low
                    at += 2
                }
                return true
            }
            return parsed ? UUID(uuid: bytes) : nil
        }
    }

    /// `uuid`'s text in lowercase, as the contract writes ids.
    public static func lowercase(_ uuid: UUID) -> String {
        withUnsafeBytes(of: uuid.uuid) { bytes in
            String(unsafeUninitializedCapacity: 36) { text in
                var at = 0
                for index in 0..<16 {
                    if dashBefore(index) {
                        text[at] = UInt8(ascii: "-")
                        at += 1
                    }
                    text[at] = Hex.digit(bytes[index] >> 4)
                    text[at + 1] = Hex.digit(bytes[index] & 0x0f)
                    at += 2
                }
                return at
            }
        }
    }

    /// Whether a dash comes before the byte at `index` (after the 4th, 6th, 8th and 10th).
    private static func dashBefore(_ index: Int) -> Bool { index == 4 || index == 6 || index == 8 || index == 10 }
}
