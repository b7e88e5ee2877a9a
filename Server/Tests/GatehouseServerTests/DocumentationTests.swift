import Foundation
import Testing

/// The documents that name tests (SECURITY.md's requirements, docs/traceability.md's seed items)
/// stay true: every test they cite exists, and no requirement is marked met without one.
@Suite struct DocumentationTests {
    /// The repository's root (this file is Server/Tests/GatehouseServerTests/DocumentationTests.swift).
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// Every Swift test file under Server/Tests/, by base name, with its text.
    static let testFiles: [String: String] = {
        var files: [String: String] = [:]
        let tests = root.appendingPathComponent("Server/Tests")
        for case let url as URL in FileManager.default.enumerator(at: tests, includingPropertiesForKeys: nil) ?? .init()
        where url.pathExtension == "swift" {
            files[url.lastPathComponent] = try? String(contentsOf: url, encoding: .utf8)
        }
        return files
    }()

    /// Whether `file` declares a test function `name`: `func name(` with an `@Test` attribute
    /// between it and the declaration before it (attributes may span lines and hold any text).
    static func declares(_ file: String, _ name: String) -> Bool {
        guard let text = testFiles[file], let declaration = text.range(of: "func \(name)(") else { return false }
        let before = text[..<declaration.lowerBound]
        let start = before.range(of: "func ", options: .backwards)?.upperBound ?? before.startIndex
        return before[start...].contains("@Test")
    }

    /// `text` without its parenthesised remarks, where backticks quote claims and values, not tests.
    static func withoutRemarks(_ text: String) -> String {
        var depth = 0
        var kept = ""
        for character in text {
            if character == "(" { depth += 1 } else if character == ")" { depth = max(0, depth - 1) } else if depth == 0 { kept.append(character) }
        }
        return kept
    }

    static func backticked(_ text: String) -> [String] {
        text.split(separator: "`", omittingEmptySubsequences: false).enumerated().compactMap { $0.offset % 2 == 1 ? String($0.element) : nil }
    }

    @Test func securityRequirementsMarkedMetNameTestsThatExist() throws {
        let text = try String(contentsOf: Self.root.appendingPathComponent("SECURITY.md"), encoding: .utf8)
        var met = 0
        for line in text.split(separator: "\n") where line.hasPrefix("| R") {
            let cells = line.split(separator: "|", omittingEmptySubsequences: false).map { $0.trimmingCharacters(in: .whitespaces) }
            guard cells.count >= 6, cells[5] == "met" else { continue }
            met += 1
            let id = cells[1]
            var file: String?
            var cited = 0
            for token in Self.backticked(Self.withoutRemarks(cells[4])) {
                if token.hasSuffix(".swift") {
                    file = URL(fileURLWithPath: token).lastPathComponent
                    #expect(Self.testFiles[file!] != nil, "\(id): no test file \(token)")
                } else if token.hasSuffix(".py") || token.hasSuffix(".sh") {
                    #expect(FileManager.default.fileExists(atPath: Self.root.appendingPathComponent(token).path), "\(id): no script \(token)")
                    cited += 1
                } else if let file, token.range(of: #"^[a-z][A-Za-z0-9]*$"#, options: .regularExpression) != nil {
                    #expect(Self.declares(file, token), "\(id): \(file) has no test \(token)")
                    cited += 1
                }
            }
            #expect(cited > 0, "\(id) is marked met without a named test")
        }
        #expect(met >= 50)
    }

    @Test func everyTestTheTraceabilityTableCitesExists() throws {
        let url = Self.root.appendingPathComponent("docs/traceability.md")
        let text = try String(contentsOf: url, encoding: .utf8)
        let citation = try Regex(#"`([A-Za-z0-9]+\.swift):([A-Za-z0-9_]+)`"#)
        var checked = 0
        for match in text.matches(of: citation) {
            let file = String(match.output[1].substring!)
            let name = String(match.output[2].substring!)
            #expect(Self.declares(file, name), "docs/traceability.md cites \(file):\(name), which does not exist")
            checked += 1
        }
        #expect(checked > 300)
    }

    /// Each seed's count line says what its rows say: every row is proven, deviating by a
    /// named decision, out of scope, measured, or a Keychain call Linux cannot run; a deviating
    /// row names its decision.
    @Test func eachSeedsCountLineMatchesItsRows() throws {
        let text = try String(contentsOf: Self.root.appendingPathComponent("docs/traceability.md"), encoding: .utf8)
        let sections = text.components(separatedBy: "\n## ").dropFirst().filter { $0.contains("**Count (") }
        #expect(sections.count == 4)
        for section in sections {
            let title = String(section.prefix { $0 != "\n" })
            var counts = ["rows": 0, "proven": 0, "deviating": 0, "out of scope": 0, "measured": 0, "Keychain": 0, "WEAK": 0]
            for line in section.split(separator: "\n") where line.hasPrefix("| ") && !line.hasPrefix("| id ") && !line.hasPrefix("|---") {
                let cells = line.split(separator: "|", omittingEmptySubsequences: false)
                guard cells.count >= 5 else { continue }
                let proof = cells[cells.count - 2].trimmingCharacters(in: .whitespaces)
                counts["rows", default: 0] += 1
                if proof.contains("WEAK:") { counts["WEAK", default: 0] += 1 }
                let kind: String
                if proof.hasPrefix("deviates: decision") {
                    kind = "deviating"
                } else if proof.lowercased().hasPrefix("out of scope") {
                    kind = "out of scope"
                } else if proof.hasPrefix("the Keychain call itself is not verifiable on Linux") {
                    kind = "Keychain"
                } else if proof.contains("BENCHMARKS.md"), !proof.contains(".swift:") {
                    kind = "measured"
                } else {
                    kind = "proven"
                }
                counts[kind, default: 0] += 1
                #expect(kind != "proven" || proof.contains(".swift:"), "\(title): a proven row cites no test: \(line)")
            }
            guard let countLine = section.split(separator: "\n").first(where: { $0.hasPrefix("**Count (") }) else { continue }
            func stated(_ pattern: String) -> Int {
                guard let match = countLine.firstMatch(of: try! Regex(pattern)), let value = match.output[1].substring else { return 0 }
                return Int(value) ?? -1
            }
            let said = [
                "rows": stated(#"Count \((\d+) rows\)"#), "proven": stated(#"(\d+) proven"#), "deviating": stated(#"(\d+) deviating"#),
                "out of scope": stated(#"(\d+) out of scope"#), "measured": stated(#"(\d+) measured"#), "Keychain": stated(#"(\d+) Keychain"#),
                "WEAK": stated(#"(\d+) are marked"#),
            ]
            #expect(said == counts, "\(title): the count line says \(said), the rows say \(counts)")
        }
    }
}
