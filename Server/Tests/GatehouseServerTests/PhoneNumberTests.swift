import Foundation
import GatehouseCore
import Testing

/// Phone numbers in E.164: `PhoneNumber.parse` on exact values, and against Google's
/// libphonenumber (the `phonenumbers` package) on thousands of numbers typed the ways people
/// type them, made by Tests/support/phone_cases.py; `PhoneNumber.region` and `kind` against it on
/// thousands of numbers of every region and type, made by Tests/support/phone_kinds.py.
@Suite struct PhoneNumberTests {
    /// One input and what libphonenumber makes of it: an E.164 number, or "refuse".
    struct Case: Decodable {
        let input: String
        let region: String
        let expect: String
    }

    struct Cases: Decodable {
        let cases: [Case]
    }

    /// A number and the region and type libphonenumber gives it (`region` nil when no region of
    /// its calling code fits; `kind` a `PhoneNumberKind` raw value).
    struct KindCase: Decodable {
        let e164: String
        let region: String?
        let kind: String
    }

    struct KindCases: Decodable {
        let cases: [KindCase]
    }

    static var script: URL { supportScript("phone_cases.py") }

    static func supportScript(_ name: String) -> URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("support/\(name)")
    }

    /// Runs phone_cases.py with `GATEHOUSE_TEST_PYTHON` and decodes what it prints.
    static func libphonenumberCases() async throws -> [Case] {
        try JSONDecoder().decode(Cases.self, from: await output(of: script)).cases
    }

    /// Runs phone_kinds.py with `GATEHOUSE_TEST_PYTHON` and decodes what it prints.
    static func libphonenumberKinds() async throws -> [KindCase] {
        try JSONDecoder().decode(KindCases.self, from: await output(of: supportScript("phone_kinds.py"))).cases
    }

    /// What `script` prints, run with `GATEHOUSE_TEST_PYTHON`.
    static func output(of script: URL) async throws -> Data {
        let (status, text) = try await EmailProcessTests.run(try #require(SMTPSink.python), [script.path], errors: false)
        try #require(status == 0, "\(script.lastPathComponent) failed (is phonenumbers installed?)")
        return Data(text.utf8)
    }

    @Test(.requires(SMTPSink.python != nil, "GATEHOUSE_TEST_PYTHON with phonenumbers"))
    func agreesWithLibphonenumber() async throws {
        let cases = try await Self.libphonenumberCases()
        #expect(cases.count >= 2_000)
        #expect(Set(cases.map(\.region)).count >= 20)
        var mismatches: [String] = []
        for item in cases {
            let got: String
            do {
                got = try PhoneNumber.parse(item.input, defaultRegion: item.region).e164
            } catch {
                got = "refuse (\(error))"
            }
            let agrees = item.expect == "refuse" ? got.hasPrefix("refuse") : got == item.expect
            if !agrees {
                mismatches.append("\(item.input.debugDescription) in \(item.region): expected \(item.expect), got \(got)")
            }
        }
        for mismatch in mismatches.prefix(20) {
            Issue.record("\(mismatch)")
        }
        #expect(mismatches.isEmpty, "\(mismatches.count) of \(cases.count) inputs disagree with libphonenumber")
    }

    /// `region` and `kind` on every type of every region's numbers, NANP area codes and unassigned
    /// numbers, as libphonenumber's getRegionCodeForNumber and getNumberType give them. A number
    /// `parse` refuses (an impossible length) has no kind: that agrees with "unknown" only.
    @Test(.requires(SMTPSink.python != nil, "GATEHOUSE_TEST_PYTHON with phonenumbers"))
    func kindsAgreeWithLibphonenumber() async throws {
        let cases = try await Self.libphonenumberKinds()
        #expect(cases.count >= 10_000)
        #expect(Set(cases.compactMap(\.region)).count >= 240)
        #expect(Set(cases.map(\.kind)) == Set(PhoneNumberKind.allCases.map(\.rawValue)))
        var mismatches: [String] = []
        var classified = 0
        for item in cases {
            let number: PhoneNumber
            do {
                number = try PhoneNumber.parse(item.e164, defaultRegion: "US")
            } catch {
                if item.kind != "unknown" {
                    mismatches.append("\(item.e164): expected \(item.kind), parse refused it (\(error))")
                }
                continue
            }
            classified += 1
            guard number.e164 == item.e164 else {
                mismatches.append("\(item.e164): parsed as \(number.e164)")
                continue
            }
            if number.region != item.region || number.kind.rawValue != item.kind {
                mismatches.append(
                    "\(item.e164): expected \(item.region ?? "no region") \(item.kind), "
                        + "got \(number.region ?? "no region") \(number.kind.rawValue)")
            }
        }
        #expect(classified >= 10_000)
        for mismatch in mismatches.prefix(20) {
            Issue.record("\(mismatch)")
        }
        #expect(mismatches.isEmpty, "\(mismatches.count) of \(cases.count) numbers disagree with libphonenumber")
    }

    @Test func nationalFormatUsesTheDefaultRegion() throws {
        let number = try PhoneNumber.parse("(415) 555-0100", defaultRegion: "US")
        #expect(number.e164 == "+14155550100")
        #expect(number.callingCode == "1")
        #expect(number.nationalNumber == "4155550100")
        #expect(number.description == "+14155550100")
        #expect(try PhoneNumber.parse("1 415 555 0100", defaultRegion: "us").e164 == "+14155550100")
        #expect(try PhoneNumber.parse("020 7946 0958", defaultRegion: "GB").e164 == "+442079460958")
    }

    @Test func internationalForms() throws {
        #expect(try PhoneNumber.parse("+44 20 7946 0958", defaultRegion: "US").e164 == "+442079460958")
        #expect(try PhoneNumber.parse("+44 (0)20 7946 0958", defaultRegion: "US").e164 == "+442079460958")
        #expect(try PhoneNumber.parse("0044 20 7946 0958", defaultRegion: "GB").e164 == "+442079460958")
        #expect(try PhoneNumber.parse("011 44 20 7946 0958", defaultRegion: "US").e164 == "+442079460958")
        // A leading 0 that is part of the number (Italy has no trunk prefix).
        #expect(try PhoneNumber.parse("+39 06 6982 0000", defaultRegion: "US").e164 == "+390669820000")
    }

    @Test func refusals() {
        #expect(throws: PhoneNumber.Refusal.impossibleLength) { try PhoneNumber.parse("555-0100", defaultRegion: "US") }
        #expect(throws: PhoneNumber.Refusal.impossibleLength) { try PhoneNumber.parse("+1 415 555 01000", defaultRegion: "US") }
        #expect(throws: PhoneNumber.Refusal.notANumber) { try PhoneNumber.parse("call me", defaultRegion: "US") }
        #expect(throws: PhoneNumber.Refusal.notANumber) {
            try PhoneNumber.parse(String(repeating: "1", count: 41), defaultRegion: "US")
        }
        #expect(throws: PhoneNumber.Refusal.unknownCallingCode) { try PhoneNumber.parse("+999 1234", defaultRegion: "US") }
        #expect(throws: PhoneNumber.Refusal.empty) { try PhoneNumber.parse(" ( ) - ", defaultRegion: "US") }
        #expect(throws: PhoneNumber.Refusal.unknownRegion) { try PhoneNumber.parse("415 555 0100", defaultRegion: "XX") }
    }

    @Test func callingCodesAndRangeKeys() throws {
        #expect(PhoneNumber.callingCode(ofRegion: "US") == "1")
        #expect(PhoneNumber.callingCode(ofRegion: "CA") == "1")
        #expect(PhoneNumber.callingCode(ofRegion: "GB") == "44")
        #expect(PhoneNumber.callingCode(ofRegion: "XX") == nil)
        #expect(try PhoneNumber.parse("+14155550100", defaultRegion: "US").rangeKey == "+14155550")
    }
}
