import Foundation
import GatehouseCore
@testable import GatehouseServer
import GatehouseWire
import NIOCore
import Testing

/// Issue 61: the bodies of checks, spends, refreshes and password sign-ins read themselves from
/// `JSONShape`'s walk (`JSONReadable`) instead of going through `JSONDecoder`. A body read that way
/// must be the value the decoder gives, and every body a reader is unsure of must get the
/// decoder's answer (its value, or its message): over plain bodies, awkward ones, and thousands of
/// mutations of them. The walk's own refusals (a key twice, too deep) are the same whichever way
/// a body goes.
@Suite struct JSONReadingTests {
    enum Outcome<T: Equatable>: Equatable {
        case value(T)
        case refused(status: Int, message: String)
    }

    /// `body` as the route decodes it, and which way it went.
    static func routed<T: JSONReadable & Equatable>(_ type: T.Type, _ body: [UInt8]) -> (Outcome<T>, JSONRequestBody.Path?) {
        do {
            let (value, path) = try JSONRequestBody.decode(type, from: ByteBuffer(bytes: body))
            return (.value(value), path)
        } catch {
            return (refusal(error), nil)
        }
    }

    /// `body` through `JSONDecoder` alone: `T` is only known to be `Decodable` here.
    static func decoded<T: Decodable & Equatable>(_ type: T.Type, _ body: [UInt8]) -> Outcome<T> {
        do {
            let (value, path) = try JSONRequestBody.decode(type, from: ByteBuffer(bytes: body))
            #expect(path == .decoder)
            return .value(value)
        } catch {
            return refusal(error)
        }
    }

    static func refusal<T>(_ error: any Error) -> Outcome<T> {
        guard let error = error as? GatehouseError else { return .refused(status: 0, message: "\(error)") }
        return .refused(status: error.status, message: error.message)
    }

    static let checks: [String] = [
        #"{"action":"save_item"}"#,
        #"{"action": "save_item", "context": {"saved_count": 2}}"#,
        #"{"context":{"a":1,"b":-3,"c":0},"action":"x","extra":[1,2.5,{"z":null},true,false,"s"]}"#,
        " \t\r\n{\"action\":\"\\u00e9t\\u00e9 \\ud83d\\ude00 \\\"q\\\" \\\\ \\/ \\n \\b\\f\\r\\t \\u0000\"} \n",
        #"{"action":"x","context":null}"#,
        #"{"action":"x","context":{}}"#,
        #"{"action":"x","context":{"max":9223372036854775807,"min":-9223372036854775808}}"#,
        #"{"action":"zoë 😀 \u2028"}"#,
    ]

    static let spends: [String] = [
        #"{"idempotency_key":"k-1","action":"practice"}"#,
        #"{"idempotency_key":"k-2","action":"practice","subject":"drill 4"}"#,
        #"{"subject":null,"action":"practice","idempotency_key":"k-3"}"#,
    ]

    static let refreshes: [String] = [
        #"{"refresh_token":"rt_2b7f0c9e41d84a3c9a3f5e7d1c0b8a6f"}"#,
        #"{"refresh_token":"rt_x","device":{"name":"iPhone"}}"#,
    ]

    static let logins: [String] = [
        #"{"email":"ada@example.com","password":"correct horse battery staple"}"#,
        #"{"password":"p\u00e4ss \"w\" \\ \/ \ud83d\ude00","email":" Ada@Example.COM ","captcha_token":"c-1"}"#,
        #"{"email":"a@b.co","password":"","captcha_token":null,"device":{"name":"iPhone"}}"#,
    ]

    /// Bodies the decoder decides: a reader gives them up, or the walk is not sure of them.
    static let awkward: [String] = [
        "", "{}", "[]", "[1]", "\"x\"", "null", "1",
        #"{"action":null}"#, #"{"action":1}"#, #"{"action":["x"]}"#,
        #"{"action":"x","context":{"n":1.0}}"#, #"{"action":"x","context":{"n":1e2}}"#, #"{"action":"x","context":{"n":1.5}}"#,
        #"{"action":"x","context":{"n":-0}}"#, #"{"action":"x","context":{"n":01}}"#, #"{"action":"x","context":{"n":+1}}"#,
        #"{"action":"x","context":{"n":9223372036854775808}}"#, #"{"action":"x","context":{"n":-9223372036854775809}}"#,
        #"{"action":"x","context":[1]}"#, #"{"action":"x","context":{"n":"1"}}"#, #"{"action":"x","context":{"n":true}}"#,
        #"{"action":"x","context":{"n":null}}"#, #"{"action":"x","context":3}"#,
        "{\"action\":\"raw \u{01} control\"}", "{\"action\":\"tab\tinside\"}",
        #"{"action":tru}"#, #"{"action":nul}"#, #"{"action":"x",}"#, #"{"action":"x"} x"#, #"{"action":"x"}}"#,
        #"{"action":"\x"}"#, #"{"action":"\ud800"}"#, #"{"action":"\ud800\u0041"}"#, #"{"action":"\udc00"}"#, #"{"action":"\u12"}"#,
        #"{"action":"\u+041"}"#, "\u{FEFF}{\"action\":\"x\"}", #"{"action" "x"}"#, #"{action:"x"}"#, #"{'action':'x'}"#,
        #"{"action":"x","context":{"n":1}"#, #"{"action":"x""#,
    ]

    static let awkwardSpends: [String] = [
        #"{"idempotency_key":"k","action":7}"#, #"{"idempotency_key":"k","action":"p","subject":false}"#, #"{"action":"p"}"#,
        #"{"idempotency_key":null,"action":"p"}"#,
    ]

    static let awkwardLogins: [String] = [
        #"{"email":"a@b.co"}"#, #"{"password":"x"}"#, #"{"email":null,"password":"x"}"#, #"{"email":"a@b.co","password":7}"#,
        #"{"email":"a@b.co","password":"x","captcha_token":false}"#, #"{"email":"a@b.co","password":"\ud800"}"#,
    ]

    static let awkwardRefreshes: [String] = [#"{"refresh_token":5}"#, #"{"refresh_token":"a","refresh_token":"b"}"#, #"{"refresh_token":null}"#]

    static func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

    /// Every way a body can be decoded: plain bodies read themselves, and give the value the
    /// decoder gives; awkward ones get the decoder's own answer.
    @Test func aBodyReadByItselfIsWhatTheDecoderReads() {
        func plain<T: JSONReadable & Equatable>(_ type: T.Type, _ bodies: [String]) {
            for body in bodies {
                let (routed, path) = Self.routed(type, Self.bytes(body))
                #expect(path == .readItself, "\(body)")
                #expect(routed == Self.decoded(type, Self.bytes(body)), "\(body)")
            }
        }
        plain(EntitlementCheckRequest.self, Self.checks)
        plain(CreditSpendRequest.self, Self.spends)
        plain(RefreshRequest.self, Self.refreshes)
        plain(EmailPasswordRequest.self, Self.logins)
        func awkward<T: JSONReadable & Equatable>(_ type: T.Type, _ bodies: [[UInt8]]) {
            for body in bodies {
                let (routed, path) = Self.routed(type, body)
                #expect(path != .readItself, "\(String(decoding: body, as: UTF8.self))")
                #expect(routed == Self.decoded(type, body), "\(String(decoding: body, as: UTF8.self))")
            }
        }
        let notUTF8 = [UInt8](#"{"action":""#.utf8) + [0xFF, 0xFE] + [UInt8](#""}"#.utf8)
        awkward(EntitlementCheckRequest.self, Self.awkward.map(Self.bytes) + [notUTF8])
        awkward(CreditSpendRequest.self, (Self.awkward + Self.awkwardSpends).map(Self.bytes))
        awkward(RefreshRequest.self, (Self.awkward + Self.awkwardRefreshes).map(Self.bytes))
        awkward(EmailPasswordRequest.self, (Self.awkward + Self.awkwardLogins).map(Self.bytes))
        // The messages a client sees for those, unchanged.
        #expect(Self.routed(EntitlementCheckRequest.self, []).0 == .refused(status: 400, message: "The field 'action' is required."))
        #expect(Self.routed(EntitlementCheckRequest.self, Self.bytes(#"{"action":1}"#)).0 == .refused(status: 400, message: "The field 'action' has the wrong type."))
        #expect(Self.routed(EntitlementCheckRequest.self, Self.bytes(#"{"action":tru}"#)).0 == .refused(status: 400, message: "The request body is not valid JSON."))
        #expect(Self.routed(EntitlementCheckRequest.self, Self.bytes("[1]")).0 == .refused(status: 400, message: "The request body must be a JSON object."))
    }

    /// The walk's refusals hold on both ways in: a key twice (through an escape, by canonical
    /// equivalence, past the sixteen members compared one by one), and nesting past the limit.
    @Test func aKeyTwiceOrTooDeepIsRefusedWhicheverWayTheBodyGoes() {
        let many = (0..<40).map { "\"k\($0)\":\($0)" }.joined(separator: ",")
        let cases: [(String, String)] = [
            (#"{"action":"x","action":"y"}"#, "The request body names the field 'action' more than once."),
            (#"{"action":"x","\u0061ction":"y"}"#, "The request body names the field 'action' more than once."),
            ("{\"action\":\"x\",\"caf\u{E9}\":1,\"cafe\u{301}\":2}", "The request body names the field 'cafe\u{301}' more than once."),
            ("{\"action\":\"x\",\(many),\"k39\":0}", "The request body names the field 'k39' more than once."),
            ("{\"action\":\"x\",\(many),\"k3\":0}", "The request body names the field 'k3' more than once."),
            (#"{"action":"x","context":{"a":1,"a":2}}"#, "The request body names the field 'a' more than once."),
            ("{\"action\":\"x\",\"deep\":" + String(repeating: "[", count: 32) + String(repeating: "]", count: 32) + "}",
             "The request body nests deeper than 32 levels."),
        ]
        for (body, message) in cases {
            #expect(Self.routed(EntitlementCheckRequest.self, Self.bytes(body)).0 == .refused(status: 400, message: message), "\(body)")
            #expect(Self.decoded(EntitlementCheckRequest.self, Self.bytes(body)) == .refused(status: 400, message: message), "\(body)")
        }
        let deepest = "{\"action\":\"x\",\"deep\":" + String(repeating: "[", count: 31) + String(repeating: "]", count: 31) + "}"
        #expect(Self.routed(EntitlementCheckRequest.self, Self.bytes(deepest)).1 == .readItself)
        #expect(Self.routed(EntitlementCheckRequest.self, Self.bytes("{\"action\":\"x\",\(many)}")).1 == .readItself)
    }

    /// Thousands of mutations of the plain bodies (a byte changed, dropped, doubled or put in):
    /// whatever a reader takes, the decoder takes and reads the same; whatever it refuses gets
    /// the decoder's answer. A failure names the body it failed on.
    @Test func mutatedBodiesGetTheDecodersAnswer() {
        var random = SystemRandomNumberGenerator()
        let alphabet = Array(#"{}[]":,\ -+.0123456789eEuntrfalsd"#.utf8) + [0x00, 0x01, 0x09, 0x0A, 0x7F, 0xC3, 0xA9, 0xFF]
        var readThemselves = 0
        var total = 0
        func fuzz<T: JSONReadable & Equatable>(_ type: T.Type, _ seeds: [String], rounds: Int) {
            for seed in seeds {
                for _ in 0..<rounds {
                    var body = Self.bytes(seed)
                    for _ in 0...Int(random.next() % 3) { Self.mutate(&body, alphabet, &random) }
                    let (routed, path) = Self.routed(type, body)
                    let decoded = Self.decoded(type, body)
                    #expect(routed == decoded, "\(String(decoding: body, as: UTF8.self)) \(body)")
                    total += 1
                    if path == .readItself { readThemselves += 1 }
                }
            }
        }
        fuzz(EntitlementCheckRequest.self, Self.checks, rounds: 1_500)
        fuzz(CreditSpendRequest.self, Self.spends, rounds: 1_500)
        fuzz(RefreshRequest.self, Self.refreshes, rounds: 1_500)
        fuzz(EmailPasswordRequest.self, Self.logins, rounds: 1_500)
        // The mutations reach both ways: many still read themselves, many do not.
        #expect(readThemselves > total / 10 && readThemselves < total * 9 / 10, "\(readThemselves) of \(total)")
    }

    static func mutate(_ body: inout [UInt8], _ alphabet: [UInt8], _ random: inout SystemRandomNumberGenerator) {
        let at = body.isEmpty ? 0 : Int(random.next() % UInt64(body.count))
        let byte = alphabet[Int(random.next() % UInt64(alphabet.count))]
        switch random.next() % 4 {
        case 0 where !body.isEmpty: body[at] = byte
        case 1 where !body.isEmpty: body.remove(at: at)
        case 2 where !body.isEmpty:
            let end = min(body.count, at + 1 + Int(random.next() % 8))
            body.insert(contentsOf: body[at..<end], at: at)
        default: body.insert(byte, at: at)
        }
    }
}
