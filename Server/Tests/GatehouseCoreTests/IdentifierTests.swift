import Foundation
import GatehouseCore
import Testing

/// Ids to and from their text by arithmetic (`UUIDText`, issue 61), held to Foundation's `UUID`.
@Suite struct IdentifierTests {
    /// 10,000 random UUIDs: each read back from Foundation's text in either case is the same
    /// UUID, and each is written as Foundation's text in lowercase.
    @Test func readAndWrittenAsFoundationDoes() throws {
        for _ in 0..<10_000 {
            let uuid = UUID()
            #expect(UserID(uuid.uuidString)?.rawValue == uuid)
            #expect(SessionID(uuid.uuidString.lowercased())?.rawValue == uuid)
            #expect(UserID(uuid).description == uuid.uuidString.lowercased())
        }
        let zero = UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0))
        let ones = UUID(uuid: (255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255))
        #expect(UserID(zero).description == "00000000-0000-0000-0000-000000000000")
        #expect(UserID(ones).description == "ffffffff-ffff-ffff-ffff-ffffffffffff")
        #expect(UserID("FFFFFFFF-ffff-FfFf-fFfF-ffffffffffff")?.rawValue == ones)
    }

    /// Every ASCII character at every one of the 36 places of a UUID's text: read only where it
    /// is a hex digit (a dash at the four dashes' places), and then as Foundation reads it.
    /// Foundation (through `sscanf`) also lets a space, a tab or a sign through in some places
    /// (194 of these 4,608 texts with Swift 6.3.1 on Linux), so two texts could name one id;
    /// here one text names each.
    @Test func onlyTheCanonicalSpellingIsRead() throws {
        let text = Array("d4353639-567c-4eef-827f-328884978c32".utf8)
        for place in 0..<36 {
            for character in UInt8(0)..<128 {
                var changed = text
                changed[place] = character
                let string = String(decoding: changed, as: UTF8.self)
                let dash = [8, 13, 18, 23].contains(place)
                let allowed = dash ? character == UInt8(ascii: "-") : Character(Unicode.Scalar(character)).isHexDigit
                let ours = UserID(string)?.rawValue
                let foundations = UUID(uuidString: string)
                #expect((ours != nil) == allowed, "\(place) \(character)")
                if let ours { #expect(ours == foundations, "\(place) \(character)") }
            }
        }
        for wrong in ["", "d4353639567c4eef827f328884978c32", "d4353639-567c-4eef-827f-328884978c3", "d4353639-567c-4eef-827f-328884978c321",
                      "{d4353639-567c-4eef-827f-328884978c32}", "d4353639-567c-4eef-827f-328884978c3é", "d4353639-567c-4eef-827f3-28884978c32"] {
            #expect(UserID(wrong) == nil, "\(wrong)")
        }
    }
}
