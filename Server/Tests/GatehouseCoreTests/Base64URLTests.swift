import Foundation
import GatehouseCore
import Testing

/// Base64url without padding, one spelling only (RFC 7515 §2; finding 12).
@Suite struct Base64URLTests {
    /// Every length from 0 to 64 bytes, against Foundation's base64 with RFC 4648 §5's alphabet.
    @Test func roundTripsAgainstFoundationsBase64() throws {
        var generator = SystemRandomNumberGenerator()
        for length in 0...64 {
            let data = Data((0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) })
            let reference = String(data.base64EncodedString().compactMap { character -> Character? in
                switch character {
                case "+": "-"
                case "/": "_"
                case "=": nil
                default: character
                }
            })
            #expect(data.base64URLEncoded == reference)
            #expect(Data(base64URLEncoded: reference) == data)
        }
        #expect(Data([0xfb, 0xff, 0xbf]).base64URLEncoded == "-_-_")
        #expect(Data(base64URLEncoded: "-_-_") == Data([0xfb, 0xff, 0xbf]))
    }

    /// Padding, base64's own `+` and `/`, white space, stray bits and a lone character are refused.
    @Test(arguments: ["QQ==", "QQ=", "+/+/", "-_-/", "QQ\n", " QQ", "QR", "Q", "QUJD=", "QUJ\u{00e9}"])
    func otherSpellingsAreRefused(_ text: String) {
        #expect(Data(base64URLEncoded: text) == nil)
    }
}
