import Foundation
import GatehouseCore
@testable import GatehouseServer
import GatehouseTestSupport
import GatehouseWire
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Testing

/// Issue 47: every JSON answer is written by `CompactJSON`, which must give exactly the bytes
/// Foundation's `JSONEncoder` gives with Gatehouse's settings (keys sorted, slashes unescaped).
@Suite struct CompactJSONTests {
    static let reference: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }()

    func same(_ value: some Encodable, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let expected = try Self.reference.encode(value)
        let written = Data(try CompactJSON.encode(value))
        #expect(
            written == expected, "\(String(decoding: written, as: UTF8.self))\n!=\n\(String(decoding: expected, as: UTF8.self))",
            sourceLocation: sourceLocation)
    }

    struct Everything: Encodable {
        struct Inner: Encodable {
            var Zed = 1
            var alpha: String? = nil
            var beta: [Int?] = [1, nil, 3]
        }

        var text = "quote \" backslash \\ slash / é 😀 \u{2028} nul \u{0} bell \u{7} tab \t nl \n cr \r bs \u{8} ff \u{C} us \u{1F} del \u{7F}"
        var controls = String(decoding: (0..<32).map { UInt8($0) }, as: UTF8.self)
        var integers: [Int64] = [0, -1, .min, .max]
        var unsigned: [UInt64] = [0, .max]
        var small: [Int8] = [-128, 127]
        var doubles: [Double] = [0, -0.0, 1.5, 3, 1e21, 1e-7, .pi, .greatestFiniteMagnitude, -2.5e-300]
        var floats: [Float] = [0.1, 3, -1.25, 16_777_216]
        var flags = [true, false]
        var nothing: String? = nil
        var nulls: [String: Int?] = ["b": nil, "a": 2]
        var nested = ["Banana": ["z": 1, "a": 2], "apple": [:], "Émile": ["": 0]]
        var deeper = [Inner(), Inner(alpha: "x", beta: [])]
        var date = Date(timeIntervalSinceReferenceDate: 123_456.789)
        var url = URL(string: "https://example.com/a/b?c=d&e=f#g")!
        var data = Data([0, 1, 2, 250, 251, 255])
        var decimal = Decimal(string: "12345.678")!
        var json: [String: JSONValue] = ["k": .array([.string("v"), .number(2.5), .bool(true), .null, .object(["x": .number(1)])])]
        var empty: [String] = []
        var emptyObject: [String: String] = [:]
    }

    @Test func everyKindOfValueIsWrittenAsJSONEncoderWritesIt() throws {
        try same(Everything())
        try same(["single": "value"])
        try same([1, 2, 3])
        try same("top-level string")
        try same(42)
        try same(Optional<Int>.none)
        try same([String: [String]]())
    }

    /// What `Encoder` allows besides the synthesized shape: a key encoded again, a container
    /// filled after its parent has moved on, a container reopened, `super`, and an array's count
    /// while it is filled.
    struct Unusual: Encodable {
        enum Key: String, CodingKey { case zeta, alpha, late, again, list, parent = "super", child, counted }

        func encode(to encoder: any Encoder) throws {
            var top = encoder.container(keyedBy: Key.self)
            try top.encode("first", forKey: .again)
            var late = top.nestedContainer(keyedBy: Key.self, forKey: .late)
            var list = top.nestedUnkeyedContainer(forKey: .list)
            try top.encode(1, forKey: .zeta)
            try top.encode(["x": 1], forKey: .again)
            try late.encode(true, forKey: .alpha)
            try list.encode("a")
            var inner = list.nestedContainer(keyedBy: Key.self)
            try list.encodeNil()
            try inner.encode(2.5, forKey: .zeta)
            var reopened = top.nestedContainer(keyedBy: Key.self, forKey: .late)
            try reopened.encode("b", forKey: .zeta)
            try "parent".encode(to: top.superEncoder())
            try [3, 4].encode(to: top.superEncoder(forKey: .child))
            var counted = top.nestedUnkeyedContainer(forKey: .counted)
            for _ in 0..<3 { try counted.encode(counted.count) }
            try late.encode("c", forKey: .again)
        }
    }

    @Test func whatEncoderAllowsBeyondTheUsualShapeIsWrittenAsJSONEncoderWritesIt() throws {
        try same(Unusual())
        try same([Unusual(), Unusual()])
        let written = String(decoding: try CompactJSON.encode(Unusual()), as: UTF8.self)
        #expect(written == #"{"again":{"x":1},"child":[3,4],"counted":[0,1,2],"late":{"again":"c","alpha":true,"zeta":"b"},"list":["a",{"zeta":2.5},null],"super":"parent","zeta":1}"#)
    }

    /// The documents Gatehouse sends, built from every shipped preset.
    @Test(arguments: Preset.builtInNames)
    func theShippedDocumentsAreWrittenAsJSONEncoderWritesThem(_ name: String) throws {
        let preset = try PresetLibrary.load(name).get()
        try same(PublicConfiguration(preset: preset))
        try same(ErrorBody(error: GatehouseError.invalidRequest("The field 'x' is not valid.").payload))
    }

    /// What the signed-in reads answer, as served: decoded and encoded again by `JSONEncoder`,
    /// the same bytes.
    @Test func theSignedInAnswersAreJSONEncodersBytes() async throws {
        try await TestApp.run(.sqlite, preset: "handz") { client, _ in
            let api = AuthClient(client: client)
            let account = try await api.account("bytes@example.com")
            let token = account.session.accessToken
            _ = try await client.execute(
                uri: "/v1/me", method: .patch, headers: [.authorization: "Bearer \(token)", .contentType: "application/json"],
                body: ByteBuffer(string: #"{"display_name": "Zoë \"Z\" / O'Neil", "user_metadata": {"b": [1, 2.5, null], "a": {"nested": "yes"}}}"#))
            let me = try await api.get("/v1/me", token: token)
            #expect(Data(me.body.readableBytesView) == (try Self.reference.encode(try me.json(MeResponse.self))))
            let decided = try await api.post("/v1/entitlements/check", #"{"action": "practice_saved_flow"}"#, token: token)
            #expect(Data(decided.body.readableBytesView) == (try Self.reference.encode(try decided.json(GateDecision.self))))
            let refused = try await api.post("/v1/entitlements/check", #"{"action": "no_such_action"}"#, token: token)
            #expect(Data(refused.body.readableBytesView) == (try Self.reference.encode(try refused.json(ErrorBody.self))))
        }
    }
}
