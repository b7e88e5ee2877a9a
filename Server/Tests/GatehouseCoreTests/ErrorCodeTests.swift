import Foundation
import GatehouseCore
import GatehouseTestSupport
import GatehouseWire
import Testing

/// One meaning and one default status per error code (STYLE.md rule 14): every code Wire
/// declares has a default status, and docs/errors.md lists each code once, with that status.
@Suite struct ErrorCodeTests {
    /// The codes `ErrorCode.swift` declares, read from its source so that a new code without a
    /// status fails here.
    static func declaredCodes() throws -> [String: String] {
        let source = try String(
            contentsOf: GateRow.root.appendingPathComponent("Sources/GatehouseWire/ErrorCode.swift"), encoding: .utf8)
        let declaration = try Regex(#"public static let (\w+): ErrorCode = "([a-z_]+)""#)
        return Dictionary(uniqueKeysWithValues: source.matches(of: declaration).map {
            (String($0.output[1].substring ?? ""), String($0.output[2].substring ?? ""))
        })
    }

    /// `status` by `code`, one row each, from the table in docs/errors.md.
    static func documentedStatuses() throws -> [(code: String, status: Int)] {
        let text = try String(contentsOf: GateRow.root.appendingPathComponent("docs/errors.md"), encoding: .utf8)
        let row = try Regex(#"^\| (\d{3}) \| `([a-z_]+)` \|"#).anchorsMatchLineEndings()
        return text.matches(of: row).map { (String($0.output[2].substring ?? ""), Int($0.output[1].substring ?? "") ?? 0) }
    }

    @Test func everyDeclaredCodeHasADefaultStatus() throws {
        let declared = try Self.declaredCodes()
        #expect(declared.count > 40)
        #expect(Set(declared.values) == Set(ErrorCode.defaultStatuses.keys.map(\.rawValue)))
        for (name, code) in declared {
            #expect(ErrorCode.defaultStatuses[ErrorCode(code)] != nil, "\(name) (\(code)) has no default status")
        }
    }

    @Test func docsListEachCodeOnceWithItsDefaultStatus() throws {
        let rows = try Self.documentedStatuses()
        var seen: [String: Int] = [:]
        for row in rows {
            #expect(seen[row.code] == nil, "docs/errors.md lists \(row.code) twice")
            seen[row.code] = row.status
        }
        #expect(Set(seen.keys) == Set(ErrorCode.defaultStatuses.keys.map(\.rawValue)))
        for (code, status) in ErrorCode.defaultStatuses {
            #expect(seen[code.rawValue] == status, "docs/errors.md says \(seen[code.rawValue] ?? 0) for \(code), the code \(status)")
        }
    }

    @Test func theShortInitializerUsesTheDefaultStatus() {
        let error = GatehouseError(.tooManyAttempts, "Wait.", retryAfter: 30)
        #expect(error.status == 429 && error.code == .tooManyAttempts && error.retryAfter == 30 && error.payload.message == "Wait.")
        #expect(GatehouseError.invalidRequest("x").status == 400 && GatehouseError.serviceUnavailable(nil).status == 503)
        // The contract's one code with two statuses: 401 for an access token by default.
        #expect(ErrorCode.tokenExpired.defaultStatus == 401 && ErrorCode("not_a_code").defaultStatus == 500)
    }
}
