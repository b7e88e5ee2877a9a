import Foundation

/// Whether `text` is `lengths` characters of the base64url alphabet (A–Z, a–z, 0–9, `-`, `_`):
/// safe to echo, log or put in a URL.
func isBase64URLText(_ text: String, lengths: ClosedRange<Int>) -> Bool {
    lengths.contains(text.utf8.count)
        && text.utf8.allSatisfy { byte in
            (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
                || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "_")
        }
}
