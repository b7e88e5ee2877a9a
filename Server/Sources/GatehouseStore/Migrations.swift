import Foundation

/// A numbered schema change. Shipped migrations are never edited: a changed one is detected
/// by its checksum and refused at start. Every change is a new migration for both databases.
public struct Migration: Sendable {
    public let version: Int
    public let name: String
    /// Run in order inside one transaction.
    public let statements: [String]
    /// Why this is a contract step, from the file's `-- contract:` comment lines (nil: an expand
    /// step). Comment lines between statements are not part of any statement, so marking a
    /// shipped file leaves its checksum as it was.
    public let contract: String?

    public init(version: Int, name: String, statements: [String], contract: String? = nil) {
        self.version = version
        self.name = name
        self.statements = statements
        self.contract = contract
    }

    /// The statements that drop, rename or narrow something a node of the previous release may
    /// read or write (docs/operations.md, "Upgrading"): `DROP TABLE`, `DROP COLUMN`,
    /// `DROP CONSTRAINT`, `DROP VIEW`, `RENAME`, `ALTER COLUMN … TYPE` and `SET NOT NULL`.
    /// A migration without any is an expand step: the previous release keeps working on it.
    public var destructiveSteps: [String] {
        statements.filter { statement in
            let words = MigrationWords(statement)
            return words.contains(["DROP", "TABLE"]) || words.contains(["DROP", "COLUMN"]) || words.contains(["DROP", "CONSTRAINT"])
                || words.contains(["DROP", "VIEW"]) || words.contains(["RENAME"]) || words.contains(["SET", "NOT", "NULL"])
                || (words.contains(["ALTER", "COLUMN"]) && words.contains(["TYPE"]))
        }
    }

    /// The names this migration takes away for good: tables dropped or renamed away and not made
    /// again under the same name (a rebuild keeps its name; a table this migration creates is
    /// not the previous release's), columns dropped or renamed away. A node of the previous
    /// release that names one of them fails.
    public var removedNames: [String] {
        var removed: [String] = []
        // Made again by a rename, or made by this migration itself (a rebuild's new table).
        var kept: Set<String> = []
        for statement in statements {
            let words = MigrationWords(statement)
            if let table = words.after(["CREATE", "TABLE"]) { kept.insert(table == "if" ? words.after(["NOT", "EXISTS"]) ?? table : table) }
            if let table = words.after(["DROP", "TABLE"]) { removed.append(table) }
            if let column = words.after(["DROP", "COLUMN"]) { removed.append(column) }
            if let old = words.after(["RENAME", "COLUMN"]) { removed.append(old) }
            if let new = words.after(["RENAME", "TO"]) {
                kept.insert(new)
                if !words.contains(["RENAME", "COLUMN"]), let old = words.after(["ALTER", "TABLE"]) { removed.append(old) }
            }
        }
        return removed.filter { !kept.contains($0) }
    }

    /// Whether nodes of the previous release keep working on the schema this migration leaves.
    public var keepsPreviousReleaseWorking: Bool { destructiveSteps.isEmpty }

    /// FNV-1a over the statements: detects edits, which is all it is for.
    public var checksum: String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for statement in statements {
            for byte in statement.utf8 + [0] {
                hash ^= UInt64(byte)
                hash = hash &* 0x0000_0100_0000_01b3
            }
        }
        return String(hash, radix: 16)
    }
}

/// A statement's words, compared upper-cased, for recognising its kind (`IF EXISTS` is skipped where a
/// name is read).
struct MigrationWords {
    let words: [String]

    init(_ statement: String) {
        words = statement.split(whereSeparator: { $0.isWhitespace || $0 == "(" || $0 == ")" || $0 == "," }).map { String($0) }
    }

    func contains(_ sequence: [String]) -> Bool { index(after: sequence) != nil }

    /// The name after the first occurrence of `sequence`, lower-cased.
    func after(_ sequence: [String]) -> String? {
        guard var index = index(after: sequence) else { return nil }
        if index + 1 < words.count, words[index].uppercased() == "IF", words[index + 1].uppercased() == "EXISTS" { index += 2 }
        return index < words.count ? words[index].lowercased() : nil
    }

    private func index(after sequence: [String]) -> Int? {
        guard !sequence.isEmpty, words.count >= sequence.count else { return nil }
        for start in 0...(words.count - sequence.count)
        where zip(words[start...], sequence).allSatisfy({ $0.uppercased() == $1 }) {
            return start + sequence.count
        }
        return nil
    }
}

/// What a migration file's check found wrong: a destructive step in a file not marked as a
/// contract step (`Migrations.unmarkedContractSteps`).
public struct UnmarkedContractStep: Sendable, Equatable, CustomStringConvertible {
    /// The migration's version and name.
    public var version: Int
    public var name: String
    /// The statement that drops, renames or narrows something.
    public var statement: String

    public var description: String {
        "migration \(version) (\(name)) drops, renames or narrows something without a '-- contract:' line: \(statement.split(separator: "\n").first ?? "")"
    }
}


/// The shipped migrations, one `.sql` file each per database, bundled with this module:
/// `Migrations/sqlite/0001_users_identities_signing_keys.sql`, `Migrations/postgres/…`.
///
/// Shipped migrations are never edited, not even a comment inside a statement: the database
/// recorded each one's checksum and refuses to start when it changed (`MigrationTests` pins
/// them). To change the schema, add the next number to both directories with the same name,
/// e.g. `0014_what_it_does.sql`, and add its checksums to `MigrationTests`.
///
/// A file's name is `NNNN_name.sql`: four digits (the version, from 1, without gaps) and a
/// name of lower-case letters, digits and underscores. Its text is statements, each ending
/// with `;` at the end of a line (spaces may follow it); a statement is exactly its lines from
/// its first to that `;` (which is left out), so it holds no other `;`, except between a
/// pair of `$$` (a PostgreSQL function's body), where `;` is part of the text. Blank lines and
/// `--` comment lines between statements are not part of any statement.
public enum Migrations {
    /// The shipped migrations of `dialect`, in order of version.
    public static func all(for dialect: SQLDialect) -> [Migration] {
        switch dialect {
        case .sqlite: return sqlite
        case .postgres: return postgres
        }
    }

    static let sqlite = bundled(.sqlite)
    static let postgres = bundled(.postgres)

    private static func bundled(_ dialect: SQLDialect) -> [Migration] {
        do {
            guard let directory = Bundle.module.url(forResource: dialect.rawValue, withExtension: nil, subdirectory: "Migrations") else {
                throw MigrationFileError.unreadable("Migrations/\(dialect.rawValue)", "not in GatehouseStore's resources")
            }
            return try load(directory: directory)
        } catch {
            // A fault of the build or the installation, not of the database: nothing to serve without a schema.
            fatalError("cannot read GatehouseStore's bundled migrations: \(error)")
        }
    }

    /// The migrations in a directory of `NNNN_name.sql` files (names starting with `.` are skipped).
    static func load(directory: URL) throws(MigrationFileError) -> [Migration] {
        let names: [String]
        do {
            names = try FileManager.default.contentsOfDirectory(atPath: directory.path)
        } catch {
            throw MigrationFileError.unreadable(directory.path, "\(error)")
        }
        var files: [(name: String, text: String)] = []
        for name in names where !name.hasPrefix(".") {
            let data: Data
            do {
                data = try Data(contentsOf: directory.appendingPathComponent(name))
            } catch {
                throw MigrationFileError.unreadable(name, "\(error)")
            }
            guard let text = String(data: data, encoding: .utf8) else { throw MigrationFileError.unreadable(name, "not UTF-8 text") }
            files.append((name, text))
        }
        return try load(files: files)
    }

    /// The migrations in `files` (name and text), in order of version.
    static func load(files: [(name: String, text: String)]) throws(MigrationFileError) -> [Migration] {
        var byVersion: [Int: [(file: String, migration: Migration)]] = [:]
        for file in files {
            let migration = try migration(fileName: file.name, text: file.text)
            byVersion[migration.version, default: []].append((file.name, migration))
        }
        for version in byVersion.keys.sorted() where byVersion[version, default: []].count > 1 {
            throw MigrationFileError.duplicateVersion(version, byVersion[version, default: []].map(\.file).sorted())
        }
        let migrations = byVersion.values.compactMap(\.first?.migration).sorted { $0.version < $1.version }
        for (index, migration) in migrations.enumerated() where migration.version != index + 1 {
            throw MigrationFileError.missingVersion(index + 1)
        }
        return migrations
    }

    /// One migration from its file's name and text.
    static func migration(fileName: String, text: String) throws(MigrationFileError) -> Migration {
        let (version, name) = try versionAndName(fileName)
        return Migration(version: version, name: name, statements: try statements(text, file: fileName), contract: contract(text))
    }

    /// The text of a file's `-- contract:` comment lines, joined (nil when it has none).
    static func contract(_ text: String) -> String? {
        let reasons = text.split(separator: "\n").compactMap { line -> String? in
            let content = line.drop { $0 == " " || $0 == "\t" }
            guard content.hasPrefix("-- contract:") else { return nil }
            return content.dropFirst("-- contract:".count).trimmingCharacters(in: .whitespaces)
        }
        return reasons.isEmpty ? nil : reasons.joined(separator: " ")
    }

    /// The rule of rolling upgrades over migration files: every statement that drops, renames
    /// or narrows something is in a migration marked as a contract step.
    public static func unmarkedContractSteps(_ migrations: [Migration]) -> [UnmarkedContractStep] {
        migrations.filter { $0.contract == nil }.flatMap { migration in
            migration.destructiveSteps.map { UnmarkedContractStep(version: migration.version, name: migration.name, statement: $0) }
        }
    }

    /// `0001_users.sql` → (1, "users").
    static func versionAndName(_ fileName: String) throws(MigrationFileError) -> (Int, String) {
        let parts = fileName.split(separator: "_", maxSplits: 1, omittingEmptySubsequences: false)
        guard parts.count == 2, fileName.hasSuffix(".sql") else { throw MigrationFileError.malformedName(fileName) }
        let digits = parts[0]
        let name = parts[1].dropLast(".sql".count)
        guard digits.count == 4, digits.allSatisfy({ ("0"..."9").contains($0) }), let version = Int(digits), version > 0,
            !name.isEmpty, name.allSatisfy({ ("a"..."z").contains($0) || ("0"..."9").contains($0) || $0 == "_" })
        else { throw MigrationFileError.malformedName(fileName) }
        return (version, String(name))
    }

    /// The statements of a migration file (see `Migrations` for the format).
    static func statements(_ text: String, file: String) throws(MigrationFileError) -> [String] {
        var statements: [String] = []
        var current: [Substring] = []
        var firstLine = 0
        // Inside a `$$ … $$` body, where `;` belongs to the text.
        var quoted = false
        if let index = text.unicodeScalars.firstIndex(of: "\r") {
            let line = text.unicodeScalars[..<index].filter { $0 == "\n" }.count + 1
            throw MigrationFileError.syntax(file: file, line: line, "a carriage return (lines must end with LF alone)")
        }
        for (index, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let number = index + 1
            if current.isEmpty {
                // Between statements: blank lines and comments.
                let content = line.drop { $0 == " " || $0 == "\t" }
                if content.isEmpty || content.hasPrefix("--") { continue }
                firstLine = number
            }
            var body = line
            while let last = body.last, last == " " || last == "\t" { body = body.dropLast() }
            let dollars = body.split(separator: "$$", omittingEmptySubsequences: false).count - 1
            let touchesBody = quoted || dollars > 0
            if dollars % 2 == 1 { quoted.toggle() }
            let ends = body.last == ";" && !quoted
            if ends { body = body.dropLast() }
            if !touchesBody, body.contains(";") { throw MigrationFileError.syntax(file: file, line: number, "';' inside a statement") }
            current.append(ends ? body : line)
            guard ends else { continue }
            let statement = current.joined(separator: "\n")
            if statement.allSatisfy(\.isWhitespace) { throw MigrationFileError.syntax(file: file, line: number, "an empty statement") }
            statements.append(statement)
            current = []
        }
        if quoted { throw MigrationFileError.syntax(file: file, line: firstLine, "a '$$' body without its closing '$$'") }
        if !current.isEmpty { throw MigrationFileError.syntax(file: file, line: firstLine, "a statement without its closing ';'") }
        if statements.isEmpty { throw MigrationFileError.syntax(file: file, line: 1, "no statements") }
        return statements
    }
}

/// Why migration files cannot be read; each names the file it is about.
enum MigrationFileError: Error, Equatable, CustomStringConvertible {
    /// Not `NNNN_name.sql`.
    case malformedName(String)
    /// Two files with one version.
    case duplicateVersion(Int, [String])
    /// The versions skip this one.
    case missingVersion(Int)
    /// The file's text breaks the format at a line.
    case syntax(file: String, line: Int, String)
    /// The file or the directory cannot be read.
    case unreadable(String, String)

    var description: String {
        switch self {
        case .malformedName(let file):
            return "migration file '\(file)' is not named NNNN_name.sql (four digits from 0001, an underscore, a-z 0-9 _)"
        case .duplicateVersion(let version, let files):
            return "migration \(version) is in more than one file: \(files.joined(separator: ", "))"
        case .missingVersion(let version):
            return "migration \(version) is missing (versions run from 1 without gaps)"
        case .syntax(let file, let line, let problem):
            return "migration file '\(file)', line \(line): \(problem)"
        case .unreadable(let file, let why):
            return "migration file '\(file)' cannot be read: \(why)"
        }
    }
}
